/* TPC-C's transaction profiles (clause 2) in C, on a SQLite connection: the statements of the Python reference
 * (new_order.py, payment.py, order_status.py, delivery.py, stock_level.py), their texts given by it, run in the
 * same order with the same parameters, in the caller's transaction. Python stays the reference and the fallback;
 * native.py builds the screens from what these functions return, and the tests hold the two to each other.
 *
 * Why C: on SQLite every statement is a function call inside the terminal's process, and in Python the calls,
 * the parameters' binding, the rows made into tuples and the arithmetic between them cost the terminal about a
 * third of its CPU. Here each statement is prepared once per connection and bound in place.
 *
 * The connection is the Python session's own (its sqlite3 *), and SQLite's functions are those of the libsqlite3
 * that Python's sqlite3 module loaded, their addresses given by Python in the order of Library: no SQLite headers
 * are needed to build this. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;

enum { SQLITE_OK = 0, SQLITE_ROW = 100, SQLITE_DONE = 101 };
enum { SQLITE_INTEGER = 1, SQLITE_FLOAT = 2, SQLITE_TEXT = 3, SQLITE_BLOB = 4, SQLITE_NULL = 5 };
#define SQLITE_TRANSIENT ((void (*)(void *))-1)

typedef struct {
    int (*prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
    int (*step)(sqlite3_stmt *);
    int (*reset)(sqlite3_stmt *);
    int (*finalize)(sqlite3_stmt *);
    int (*bind_int64)(sqlite3_stmt *, int, long long);
    int (*bind_text)(sqlite3_stmt *, int, const char *, int, void (*)(void *));
    int (*bind_null)(sqlite3_stmt *, int);
    int (*column_count)(sqlite3_stmt *);
    int (*column_type)(sqlite3_stmt *, int);
    long long (*column_int64)(sqlite3_stmt *, int);
    double (*column_double)(sqlite3_stmt *, int);
    const unsigned char *(*column_text)(sqlite3_stmt *, int);
    const void *(*column_blob)(sqlite3_stmt *, int);
    int (*column_bytes)(sqlite3_stmt *, int);
    int (*extended_errcode)(sqlite3 *);
    const char *(*errmsg)(sqlite3 *);
} Library;

#define LIBRARY_FUNCTIONS ((Py_ssize_t)(sizeof(Library) / sizeof(void (*)(void))))

/* The statements of fixed text, by the names native.py gives them. */
enum {
    NO_CUSTOMER, NO_DISTRICT, NO_NEXT_ORDER, NO_ORDER, NO_NEW_ORDER,
    PAY_WAREHOUSE, PAY_DISTRICT, PAY_CUSTOMER, PAY_BY_NAME, PAY_GOOD_CREDIT, PAY_BAD_CREDIT, PAY_HISTORY,
    OS_BY_NAME, OS_CUSTOMER, OS_ORDER, OS_LINES,
    DL_OLDEST, DL_DELETE, DL_CARRIER, DL_LINES, DL_AMOUNT, DL_CUSTOMER,
    SL_LOW,
    FIXED
};
static const char *FIXED_NAMES[FIXED] = {
    "new_order.customer", "new_order.district", "new_order.next_order", "new_order.order", "new_order.new_order",
    "payment.warehouse", "payment.district", "payment.customer", "payment.by_name", "payment.good_credit",
    "payment.bad_credit", "payment.history",
    "order_status.by_name", "order_status.customer", "order_status.order", "order_status.lines",
    "delivery.oldest", "delivery.delete", "delivery.carrier", "delivery.lines", "delivery.amount", "delivery.customer",
    "stock_level.low",
};

/* A New-Order's statements over a set of rows, one text per kind, district and row count (new_order.py's SQL). */
enum { SET_ITEMS, SET_STOCK, SET_RESTOCK, SET_LINES, SET_KINDS };
static const char *SET_NAMES[SET_KINDS] = {"items", "stock", "restock", "lines"};
#define MAX_LINES 15     /* 2.4.1.3: 5..15 order lines */
#define DISTRICTS 10
#define TEXT_SIZE 64     /* the longest text kept between two statements: I_DATA and S_DATA, 50 characters */
#define MAX_NAMESAKES 512  /* customers of one district with one last name: about 3 in TPC-C's population */

typedef struct {
    PyObject_HEAD
    Library lib;
    sqlite3 *db;
    sqlite3_stmt *fixed[FIXED];
    sqlite3_stmt *set_wise[SET_KINDS][DISTRICTS + 1][MAX_LINES + 1];
    PyObject *texts;      /* dict: the fixed statements' texts by name */
    PyObject *set_text;   /* callable (kind, district, count) -> text */
} Profiles;

static PyObject *Error;  /* a statement failed: (extended error code, SQLite's message) */

/* -- statements -- */

static sqlite3_stmt *prepared_text(Profiles *self, PyObject *text) {
    Py_ssize_t length;
    const char *sql = PyUnicode_AsUTF8AndSize(text, &length);
    if (sql == NULL) return NULL;
    sqlite3_stmt *stmt = NULL;
    if (self->lib.prepare_v2(self->db, sql, (int)length, &stmt, NULL) != SQLITE_OK || stmt == NULL) {
        PyObject *args = Py_BuildValue("(is)", self->lib.extended_errcode(self->db), self->lib.errmsg(self->db));
        if (args != NULL) {
            PyErr_SetObject(Error, args);
            Py_DECREF(args);
        }
        return NULL;
    }
    return stmt;
}

static sqlite3_stmt *fixed(Profiles *self, int which) {
    if (self->fixed[which] == NULL) {
        PyObject *text = PyDict_GetItemString(self->texts, FIXED_NAMES[which]);
        if (text == NULL) {
            PyErr_Format(PyExc_KeyError, "no text for the statement %s", FIXED_NAMES[which]);
            return NULL;
        }
        self->fixed[which] = prepared_text(self, text);
    }
    return self->fixed[which];
}

static sqlite3_stmt *set_wise(Profiles *self, int kind, int district, int count) {
    if (district < 0 || district > DISTRICTS || count < 1 || count > MAX_LINES) {
        PyErr_Format(PyExc_ValueError, "no %s statement for district %d and %d rows", SET_NAMES[kind], district,
                     count);
        return NULL;
    }
    sqlite3_stmt **slot = &self->set_wise[kind][district][count];
    if (*slot == NULL) {
        PyObject *text = PyObject_CallFunction(self->set_text, "sii", SET_NAMES[kind], district, count);
        if (text == NULL) return NULL;
        *slot = prepared_text(self, text);
        Py_DECREF(text);
    }
    return *slot;
}

/* A failed step: SQLite's error as Error, the statement reset. Python rolls the transaction back, as it does after
 * a failed statement of its own. */
static void *failed(Profiles *self, sqlite3_stmt *stmt) {
    PyObject *args = Py_BuildValue("(is)", self->lib.extended_errcode(self->db), self->lib.errmsg(self->db));
    self->lib.reset(stmt);
    if (args != NULL) {
        PyErr_SetObject(Error, args);
        Py_DECREF(args);
    }
    return NULL;
}

static int bind_ints(Profiles *self, sqlite3_stmt *stmt, int first, const long long *values, int count) {
    for (int n = 0; n < count; n++)
        if (self->lib.bind_int64(stmt, first + n, values[n]) != SQLITE_OK) return -1;
    return 0;
}

static int bind_text(Profiles *self, sqlite3_stmt *stmt, int position, const char *text) {
    return self->lib.bind_text(stmt, position, text, -1, SQLITE_TRANSIENT) == SQLITE_OK ? 0 : -1;
}

/* A statement of integer parameters, bound. */
static sqlite3_stmt *with_ints(Profiles *self, sqlite3_stmt *stmt, const long long *values, int count) {
    if (stmt == NULL) return NULL;
    return bind_ints(self, stmt, 1, values, count) < 0 ? failed(self, stmt) : stmt;
}

/* Step a statement that returns no row (or whose rows are not read) to its end. 0, or -1 with the error set. */
static int run(Profiles *self, sqlite3_stmt *stmt) {
    if (stmt == NULL) return -1;
    int rc;
    while ((rc = self->lib.step(stmt)) == SQLITE_ROW) {}
    if (rc != SQLITE_DONE) return failed(self, stmt), -1;
    self->lib.reset(stmt);
    return 0;
}

/* A column as Python's sqlite3 module gives it. */
static PyObject *column(Profiles *self, sqlite3_stmt *stmt, int n) {
    switch (self->lib.column_type(stmt, n)) {
    case SQLITE_INTEGER: return PyLong_FromLongLong(self->lib.column_int64(stmt, n));
    case SQLITE_FLOAT: return PyFloat_FromDouble(self->lib.column_double(stmt, n));
    case SQLITE_TEXT: {
        const char *text = (const char *)self->lib.column_text(stmt, n);
        int length = self->lib.column_bytes(stmt, n);
        if (text == NULL && length > 0) return PyErr_NoMemory();
        return PyUnicode_FromStringAndSize(text ? text : "", length);
    }
    case SQLITE_BLOB: {
        const void *blob = self->lib.column_blob(stmt, n);
        int length = self->lib.column_bytes(stmt, n);
        if (blob == NULL && length > 0) return PyErr_NoMemory();
        return PyBytes_FromStringAndSize(blob ? blob : "", length);
    }
    default: Py_RETURN_NONE;
    }
}

static PyObject *row_tuple(Profiles *self, sqlite3_stmt *stmt) {
    int count = self->lib.column_count(stmt);
    PyObject *row = PyTuple_New(count);
    if (row == NULL) return NULL;
    for (int n = 0; n < count; n++) {
        PyObject *value = column(self, stmt, n);
        if (value == NULL) {
            Py_DECREF(row);
            return NULL;
        }
        PyTuple_SET_ITEM(row, n, value);
    }
    return row;
}

/* Every row of a bound statement as a list of tuples (Session.fetchall). */
static PyObject *all_rows(Profiles *self, sqlite3_stmt *stmt) {
    if (stmt == NULL) return NULL;
    PyObject *rows = PyList_New(0);
    int rc;
    while (rows != NULL && (rc = self->lib.step(stmt)) == SQLITE_ROW) {
        PyObject *row = row_tuple(self, stmt);
        if (row == NULL || PyList_Append(rows, row) < 0) Py_CLEAR(rows);
        Py_XDECREF(row);
    }
    if (rows == NULL) return self->lib.reset(stmt), NULL;
    if (rc != SQLITE_DONE) return Py_DECREF(rows), failed(self, stmt);
    self->lib.reset(stmt);
    return rows;
}

/* The first row of a bound statement, which must have one, read to its end; NULL with LookupError without one. */
static PyObject *first_row(Profiles *self, sqlite3_stmt *stmt, const char *what) {
    PyObject *rows = all_rows(self, stmt);
    if (rows == NULL) return NULL;
    if (PyList_GET_SIZE(rows) == 0) {
        Py_DECREF(rows);
        return PyErr_Format(PyExc_LookupError, "no %s: the database is not a TPC-C database of this scale", what);
    }
    PyObject *row = PyList_GET_ITEM(rows, 0);
    Py_INCREF(row);
    Py_DECREF(rows);
    return row;
}

/* A text column copied out (SQLite's own is good until the next step); -1 with ValueError when it does not fit. */
static int copy_text(Profiles *self, sqlite3_stmt *stmt, int n, char out[TEXT_SIZE]) {
    const char *text = (const char *)self->lib.column_text(stmt, n);
    int length = self->lib.column_bytes(stmt, n);
    if (length >= TEXT_SIZE) {
        PyErr_Format(PyExc_ValueError, "a text of %d bytes where TPC-C has at most %d", length, TEXT_SIZE - 1);
        return -1;
    }
    memcpy(out, text ? text : "", (size_t)length);
    out[length] = '\0';
    return 0;
}

/* -- New-Order (2.4.2.2) -- */

typedef struct {
    long long i_id, supply, quantity;
} Line;

typedef struct {   /* an item of the order, in i_id order */
    long long i_id, price;
    int found;
    char name[TEXT_SIZE], data[TEXT_SIZE];
} Item;

typedef struct {   /* a stock row of the order, in (i_id, w_id) order, and what the order changes in it */
    long long i_id, w_id, quantity, ytd, order_cnt, remote_cnt;
    int found, changed;  /* changed: its place among the changed rows, +1; 0 while unchanged */
    char data[TEXT_SIZE], dist_info[TEXT_SIZE];
} Stock;

typedef struct {
    long long w_id, d_id, c_id;
    Line lines[MAX_LINES];
    int line_count;
    Item items[MAX_LINES];
    int item_count;
    Stock stocks[MAX_LINES];
    int stock_count;
    int changed[MAX_LINES];  /* the stock rows changed, in the order of their first line */
    int changed_count;
} Order;

static int long_at(PyObject *list, Py_ssize_t n, long long *out) {
    *out = PyLong_AsLongLong(PyList_GET_ITEM(list, n));
    return *out == -1 && PyErr_Occurred() ? -1 : 0;
}

static int read_lines(Order *order, PyObject *items, PyObject *supplies, PyObject *quantities) {
    if (!PyList_Check(items) || !PyList_Check(supplies) || !PyList_Check(quantities)) {
        PyErr_SetString(PyExc_TypeError, "a New-Order's lines are three lists");
        return -1;
    }
    Py_ssize_t count = PyList_GET_SIZE(items);
    if (count < 1 || count > MAX_LINES || PyList_GET_SIZE(supplies) != count || PyList_GET_SIZE(quantities) != count) {
        PyErr_SetString(PyExc_ValueError, "a New-Order has 1..15 lines, each an item, a warehouse and a quantity");
        return -1;
    }
    order->line_count = (int)count;
    for (Py_ssize_t n = 0; n < count; n++) {
        Line *line = &order->lines[n];
        if (long_at(items, n, &line->i_id) < 0 || long_at(supplies, n, &line->supply) < 0 ||
            long_at(quantities, n, &line->quantity) < 0)
            return -1;
    }
    return 0;
}

/* sorted(set(item_ids)) and sorted(set(zip(item_ids, supply_w_ids))), as the Python reference reads them. */
static void sort_keys(Order *order) {
    for (int n = 0; n < order->line_count; n++) {
        const Line *line = &order->lines[n];
        int at = 0;
        while (at < order->item_count && order->items[at].i_id < line->i_id) at++;
        if (at == order->item_count || order->items[at].i_id != line->i_id) {
            memmove(&order->items[at + 1], &order->items[at], (size_t)(order->item_count - at) * sizeof(Item));
            memset(&order->items[at], 0, sizeof(Item));
            order->items[at].i_id = line->i_id;
            order->item_count++;
        }
        at = 0;
        while (at < order->stock_count && (order->stocks[at].i_id < line->i_id ||
               (order->stocks[at].i_id == line->i_id && order->stocks[at].w_id < line->supply)))
            at++;
        if (at == order->stock_count || order->stocks[at].i_id != line->i_id || order->stocks[at].w_id != line->supply) {
            memmove(&order->stocks[at + 1], &order->stocks[at], (size_t)(order->stock_count - at) * sizeof(Stock));
            memset(&order->stocks[at], 0, sizeof(Stock));
            order->stocks[at].i_id = line->i_id;
            order->stocks[at].w_id = line->supply;
            order->stock_count++;
        }
    }
}

static Item *item_of(Order *order, long long i_id) {
    for (int n = 0; n < order->item_count; n++)
        if (order->items[n].i_id == i_id) return &order->items[n];
    return NULL;
}

static Stock *stock_of(Order *order, long long i_id, long long w_id) {
    for (int n = 0; n < order->stock_count; n++)
        if (order->stocks[n].i_id == i_id && order->stocks[n].w_id == w_id) return &order->stocks[n];
    return NULL;
}

/* The items' prices, names and data: the number found (fewer than asked: an unused item, 2.4.2.3), or -1. */
static int read_items(Profiles *self, Order *order) {
    sqlite3_stmt *stmt = set_wise(self, SET_ITEMS, 0, order->item_count);
    if (stmt == NULL) return -1;
    for (int n = 0; n < order->item_count; n++)
        if (self->lib.bind_int64(stmt, n + 1, order->items[n].i_id) != SQLITE_OK) return failed(self, stmt), -1;
    int rc, found = 0;
    while ((rc = self->lib.step(stmt)) == SQLITE_ROW) {
        Item *item = item_of(order, self->lib.column_int64(stmt, 0));
        if (item == NULL || item->found) continue;
        item->found = 1;
        item->price = self->lib.column_int64(stmt, 1);
        if (copy_text(self, stmt, 2, item->name) < 0 || copy_text(self, stmt, 3, item->data) < 0)
            return self->lib.reset(stmt), -1;
        found++;
    }
    if (rc != SQLITE_DONE) return failed(self, stmt), -1;
    self->lib.reset(stmt);
    return found;
}

/* The stock rows, locked by the transaction's write lock: their quantities, data and district information. */
static int read_stock(Profiles *self, Order *order) {
    sqlite3_stmt *stmt = set_wise(self, SET_STOCK, (int)order->d_id, order->stock_count);
    if (stmt == NULL) return -1;
    for (int n = 0; n < order->stock_count; n++)
        if (self->lib.bind_int64(stmt, 2 * n + 1, order->stocks[n].i_id) != SQLITE_OK ||
            self->lib.bind_int64(stmt, 2 * n + 2, order->stocks[n].w_id) != SQLITE_OK)
            return failed(self, stmt), -1;
    int rc;
    while ((rc = self->lib.step(stmt)) == SQLITE_ROW) {
        Stock *stock = stock_of(order, self->lib.column_int64(stmt, 0), self->lib.column_int64(stmt, 1));
        if (stock == NULL) continue;
        stock->found = 1;
        stock->quantity = self->lib.column_int64(stmt, 2);
        if (copy_text(self, stmt, 3, stock->data) < 0 || copy_text(self, stmt, 4, stock->dist_info) < 0)
            return self->lib.reset(stmt), -1;
    }
    if (rc != SQLITE_DONE) return failed(self, stmt), -1;
    self->lib.reset(stmt);
    return 0;
}

/* Each line in order takes its quantity from its stock row (2.4.2.2: restocked by 91 when fewer than 10 would
 * remain), so an item ordered twice from one warehouse counts twice; the screen's line: (I_NAME, I_PRICE,
 * S_QUANTITY after the line, brand-generic, OL_AMOUNT), or None when no screen is asked for. */
static PyObject *take_lines(Profiles *self, Order *order, int screen) {
    PyObject *shown = screen ? PyTuple_New(order->line_count) : Py_NewRef(Py_None);
    if (shown == NULL) return NULL;
    for (int n = 0; n < order->line_count; n++) {
        const Line *line = &order->lines[n];
        Item *item = item_of(order, line->i_id);
        Stock *stock = stock_of(order, line->i_id, line->supply);
        if (item == NULL || !item->found || stock == NULL || !stock->found) {
            Py_DECREF(shown);
            return PyErr_Format(PyExc_LookupError, "no stock row of item %lld in warehouse %lld", line->i_id,
                                line->supply);
        }
        long long left = stock->quantity;
        left = left >= line->quantity + 10 ? left - line->quantity : left - line->quantity + 91;
        stock->quantity = left;
        stock->ytd += line->quantity;
        stock->order_cnt += 1;
        stock->remote_cnt += line->supply != order->w_id;
        if (!stock->changed) {
            order->changed[order->changed_count++] = (int)(stock - order->stocks);
            stock->changed = order->changed_count;
        }
        if (screen) {
            const char *brand = strstr(item->data, "ORIGINAL") && strstr(stock->data, "ORIGINAL") ? "B" : "G";
            PyObject *row = Py_BuildValue("(sLLsL)", item->name, item->price, left, brand, line->quantity * item->price);
            if (row == NULL) return Py_DECREF(shown), NULL;
            PyTuple_SET_ITEM(shown, n, row);
        }
    }
    (void)self;
    return shown;
}

static int restock(Profiles *self, Order *order) {
    sqlite3_stmt *stmt = set_wise(self, SET_RESTOCK, 0, order->changed_count);
    if (stmt == NULL) return -1;
    for (int n = 0; n < order->changed_count; n++) {
        const Stock *stock = &order->stocks[order->changed[n]];
        long long values[] = {stock->i_id, stock->w_id, stock->quantity, stock->ytd, stock->order_cnt,
                              stock->remote_cnt};
        if (bind_ints(self, stmt, 6 * n + 1, values, 6) < 0) return failed(self, stmt), -1;
    }
    return run(self, stmt);
}

static int insert_lines(Profiles *self, Order *order, long long o_id) {
    sqlite3_stmt *stmt = set_wise(self, SET_LINES, 0, order->line_count);
    if (stmt == NULL) return -1;
    for (int n = 0; n < order->line_count; n++) {
        const Line *line = &order->lines[n];
        const Item *item = item_of(order, line->i_id);
        const Stock *stock = stock_of(order, line->i_id, line->supply);
        long long values[] = {o_id, order->d_id, order->w_id, n + 1, line->i_id, line->supply, line->quantity,
                              line->quantity * item->price};
        if (bind_ints(self, stmt, 9 * n + 1, values, 8) < 0 || bind_text(self, stmt, 9 * n + 9, stock->dist_info) < 0)
            return failed(self, stmt), -1;
    }
    return run(self, stmt);
}

/* The customer's discount, name and credit with the warehouse's tax, then the district's next order number and
 * tax: (C_DISCOUNT, C_LAST, C_CREDIT, W_TAX) and (D_NEXT_O_ID, D_TAX), read before the items and the stock. */
static int read_customer_and_district(Profiles *self, Order *order, PyObject **customer, PyObject **district) {
    long long customer_key[] = {order->w_id, order->d_id, order->c_id}, district_key[] = {order->w_id, order->d_id};
    *customer = first_row(self, with_ints(self, fixed(self, NO_CUSTOMER), customer_key, 3), "customer");
    if (*customer == NULL) return -1;
    *district = first_row(self, with_ints(self, fixed(self, NO_DISTRICT), district_key, 2), "district");
    return *district == NULL ? -1 : 0;
}

/* What the order writes: the district's next number, the order (its entry date returned), the new order, the stock
 * rows and the lines; the entry date, or NULL. */
static PyObject *write_order(Profiles *self, Order *order, long long o_id) {
    long long next[] = {o_id + 1, order->w_id, order->d_id}, queued[] = {o_id, order->d_id, order->w_id};
    int all_local = 1;
    for (int n = 0; n < order->line_count; n++) all_local &= order->lines[n].supply == order->w_id;
    long long entered[] = {o_id, order->d_id, order->w_id, order->c_id, order->line_count, all_local};
    if (run(self, with_ints(self, fixed(self, NO_NEXT_ORDER), next, 3)) < 0) return NULL;
    PyObject *row = first_row(self, with_ints(self, fixed(self, NO_ORDER), entered, 6), "order's entry date");
    if (row == NULL) return NULL;
    if (run(self, with_ints(self, fixed(self, NO_NEW_ORDER), queued, 3)) < 0 || restock(self, order) < 0 ||
        insert_lines(self, order, o_id) < 0)
        return Py_DECREF(row), NULL;
    PyObject *date = Py_NewRef(PyTuple_GET_ITEM(row, 0));
    Py_DECREF(row);
    return date;
}

/* new_order(w_id, d_id, c_id, item_ids, supply_w_ids, quantities, screen): None when an item is unused (2.4.2.3:
 * the caller rolls back), else, with screen, (C_DISCOUNT, C_LAST, C_CREDIT, W_TAX, D_TAX, O_ID, O_ENTRY_D, lines),
 * without, True. */
static PyObject *new_order(Profiles *self, PyObject *args) {
    Order order;
    memset(&order, 0, sizeof order);
    PyObject *items, *supplies, *quantities, *customer = NULL, *district = NULL, *lines = NULL, *entered = NULL;
    int screen;
    if (!PyArg_ParseTuple(args, "LLLOOOp", &order.w_id, &order.d_id, &order.c_id, &items, &supplies, &quantities,
                          &screen) ||
        read_lines(&order, items, supplies, quantities) < 0)
        return NULL;
    sort_keys(&order);
    if (read_customer_and_district(self, &order, &customer, &district) < 0) goto done;
    int found = read_items(self, &order);
    if (found < 0 || read_stock(self, &order) < 0) goto done;
    if (found < order.item_count) {  /* 2.4.2.3: the caller rolls back */
        lines = Py_NewRef(Py_None);
        goto done;
    }
    long long o_id = PyLong_AsLongLong(PyTuple_GET_ITEM(district, 0));
    if (o_id == -1 && PyErr_Occurred()) goto done;
    if ((lines = take_lines(self, &order, screen)) == NULL || (entered = write_order(self, &order, o_id)) == NULL) {
        Py_CLEAR(lines);
        goto done;
    }
    if (!screen) {
        Py_SETREF(lines, Py_NewRef(Py_True));
        goto done;
    }
    Py_SETREF(lines, Py_BuildValue("(OOOOOLOO)", PyTuple_GET_ITEM(customer, 0), PyTuple_GET_ITEM(customer, 1),
                                   PyTuple_GET_ITEM(customer, 2), PyTuple_GET_ITEM(customer, 3),
                                   PyTuple_GET_ITEM(district, 1), o_id, entered, lines));
done:
    Py_XDECREF(customer);
    Py_XDECREF(district);
    Py_XDECREF(entered);
    return lines;
}

/* -- Payment (2.5.2.2) -- */

/* The customer a Payment or Order-Status names by last name (2.5.2.2, 2.6.2.2): of those sorted by C_FIRST, the
 * one at ceil(n/2); its C_ID, or -1 with LookupError when there is none. */
static long long middle_by_name(Profiles *self, sqlite3_stmt *stmt, long long w_id, long long d_id, const char *last) {
    long long key[] = {w_id, d_id};
    if (stmt == NULL || bind_ints(self, stmt, 1, key, 2) < 0 || bind_text(self, stmt, 3, last) < 0)
        return stmt ? (failed(self, stmt), -1) : -1;
    long long ids[MAX_NAMESAKES];
    int count = 0, rc;
    while ((rc = self->lib.step(stmt)) == SQLITE_ROW)
        if (count++ < MAX_NAMESAKES) ids[count - 1] = self->lib.column_int64(stmt, 0);
    if (rc != SQLITE_DONE) return failed(self, stmt), -1;
    self->lib.reset(stmt);
    if (count > MAX_NAMESAKES) {
        PyErr_Format(PyExc_ValueError, "more than %d customers named %s in one district", MAX_NAMESAKES, last);
        return -1;
    }
    if (count == 0) {
        PyErr_Format(PyExc_LookupError, "no customer named %s in warehouse %lld district %lld", last, w_id, d_id);
        return -1;
    }
    return ids[(count - 1) / 2];
}

/* The warehouse's and the district's YTD raised by the payment, each row read as it is changed (RETURNING). */
static int pay_warehouse_and_district(Profiles *self, long long w_id, long long d_id, long long paid,
                                      PyObject **warehouse, PyObject **district) {
    long long warehouse_key[] = {paid, w_id}, district_key[] = {paid, w_id, d_id};
    *warehouse = first_row(self, with_ints(self, fixed(self, PAY_WAREHOUSE), warehouse_key, 2), "warehouse");
    if (*warehouse == NULL) return -1;
    *district = first_row(self, with_ints(self, fixed(self, PAY_DISTRICT), district_key, 3), "district");
    return *district == NULL ? -1 : 0;
}

/* The customer pays: with bad credit, the payment's entry at the head of C_DATA, whose start is returned (else
 * None); NULL on an error. */
static PyObject *pay_customer(Profiles *self, long long c_w_id, long long c_d_id, long long c_id, long long d_id,
                              long long w_id, long long paid, int bad_credit) {
    long long values[] = {paid, paid, c_w_id, c_d_id, c_id};
    if (!bad_credit) {
        if (run(self, with_ints(self, fixed(self, PAY_GOOD_CREDIT), values, 5)) < 0) return NULL;
        Py_RETURN_NONE;
    }
    char entry[160];
    snprintf(entry, sizeof entry, "%lld %lld %lld %lld %lld %lld.%02lld ", c_id, c_d_id, c_w_id, d_id, w_id,
             paid / 100, paid % 100);
    sqlite3_stmt *stmt = fixed(self, PAY_BAD_CREDIT);
    if (stmt == NULL) return NULL;
    if (bind_ints(self, stmt, 1, values, 2) < 0 || bind_text(self, stmt, 3, entry) < 0 ||
        bind_ints(self, stmt, 4, values + 2, 3) < 0)
        return failed(self, stmt);
    PyObject *row = first_row(self, stmt, "customer's data");
    if (row == NULL) return NULL;
    PyObject *shown = Py_NewRef(PyTuple_GET_ITEM(row, 0));
    Py_DECREF(row);
    return shown;
}

static PyObject *record_history(Profiles *self, long long c_id, long long c_d_id, long long c_w_id, long long d_id,
                                long long w_id, long long paid, PyObject *warehouse, PyObject *district) {
    PyObject *data = PyUnicode_FromFormat("%S    %S", PyTuple_GET_ITEM(warehouse, 0), PyTuple_GET_ITEM(district, 0));
    if (data == NULL) return NULL;
    sqlite3_stmt *stmt = fixed(self, PAY_HISTORY);
    long long values[] = {c_id, c_d_id, c_w_id, d_id, w_id, paid};
    PyObject *row = NULL;
    if (stmt != NULL) {
        if (bind_ints(self, stmt, 1, values, 6) < 0 || bind_text(self, stmt, 7, PyUnicode_AsUTF8(data)) < 0)
            failed(self, stmt);
        else
            row = first_row(self, stmt, "history's date");
    }
    Py_DECREF(data);
    if (row == NULL) return NULL;
    PyObject *date = Py_NewRef(PyTuple_GET_ITEM(row, 0));
    Py_DECREF(row);
    return date;
}

/* payment(w_id, d_id, c_w_id, c_d_id, c_id or None, c_last or None, amount in cents, screen): with screen,
 * (C_ID, the warehouse's row, the district's, the customer's as read, C_DATA's start or None, H_DATE), else True. */
static PyObject *payment(Profiles *self, PyObject *args) {
    long long w_id, d_id, c_w_id, c_d_id, paid, c_id = -1;
    PyObject *given_id, *given_last, *warehouse = NULL, *district = NULL, *customer = NULL, *data = NULL;
    PyObject *date = NULL, *result = NULL;
    int screen;
    if (!PyArg_ParseTuple(args, "LLLLOOLp", &w_id, &d_id, &c_w_id, &c_d_id, &given_id, &given_last, &paid, &screen))
        return NULL;
    if (given_id != Py_None && (c_id = PyLong_AsLongLong(given_id)) == -1 && PyErr_Occurred()) return NULL;
    if (pay_warehouse_and_district(self, w_id, d_id, paid, &warehouse, &district) < 0) goto done;
    if (given_id == Py_None) {
        const char *last = PyUnicode_AsUTF8(given_last);
        if (last == NULL || (c_id = middle_by_name(self, fixed(self, PAY_BY_NAME), c_w_id, c_d_id, last)) < 0)
            goto done;
    }
    long long key[] = {c_w_id, c_d_id, c_id};
    customer = first_row(self, with_ints(self, fixed(self, PAY_CUSTOMER), key, 3), "customer");
    if (customer == NULL) goto done;
    PyObject *credit = PyTuple_GET_ITEM(customer, 10);
    int bad_credit = PyUnicode_Check(credit) && PyUnicode_CompareWithASCIIString(credit, "BC") == 0;
    if ((data = pay_customer(self, c_w_id, c_d_id, c_id, d_id, w_id, paid, bad_credit)) == NULL) goto done;
    if ((date = record_history(self, c_id, c_d_id, c_w_id, d_id, w_id, paid, warehouse, district)) == NULL) goto done;
    result = screen ? Py_BuildValue("(LOOOOO)", c_id, warehouse, district, customer, data, date) : Py_NewRef(Py_True);
done:
    Py_XDECREF(warehouse);
    Py_XDECREF(district);
    Py_XDECREF(customer);
    Py_XDECREF(data);
    Py_XDECREF(date);
    return result;
}

/* -- Order-Status (2.6.2.2) -- */

/* order_status(w_id, d_id, c_id or None, c_last or None): (the customer's row, the latest order's rows, its lines'
 * rows). */
static PyObject *order_status(Profiles *self, PyObject *args) {
    long long w_id, d_id, c_id;
    PyObject *given_id, *given_last, *customer = NULL, *order = NULL, *lines = NULL, *result = NULL;
    if (!PyArg_ParseTuple(args, "LLOO", &w_id, &d_id, &given_id, &given_last)) return NULL;
    if (given_id == Py_None) {  /* the namesakes' rows, all read; the middle one is the customer */
        long long key[] = {w_id, d_id};
        sqlite3_stmt *stmt = with_ints(self, fixed(self, OS_BY_NAME), key, 2);
        const char *last = PyUnicode_AsUTF8(given_last);
        if (stmt == NULL || last == NULL) return NULL;
        if (bind_text(self, stmt, 3, last) < 0) return failed(self, stmt);
        PyObject *namesakes = all_rows(self, stmt);
        if (namesakes == NULL) return NULL;
        Py_ssize_t count = PyList_GET_SIZE(namesakes);
        if (count == 0) {
            Py_DECREF(namesakes);
            return PyErr_Format(PyExc_LookupError, "no customer named %s in warehouse %lld district %lld", last, w_id,
                                d_id);
        }
        customer = Py_NewRef(PyList_GET_ITEM(namesakes, (count - 1) / 2));
        Py_DECREF(namesakes);
    }
    c_id = PyLong_AsLongLong(given_id == Py_None ? PyTuple_GET_ITEM(customer, 0) : given_id);
    if (c_id == -1 && PyErr_Occurred()) goto done;
    long long key[] = {w_id, d_id, c_id}, latest[] = {w_id, d_id, w_id, d_id, c_id};
    if (given_id != Py_None &&
        (customer = first_row(self, with_ints(self, fixed(self, OS_CUSTOMER), key, 3), "customer")) == NULL)
        goto done;
    if ((order = all_rows(self, with_ints(self, fixed(self, OS_ORDER), key, 3))) == NULL ||
        (lines = all_rows(self, with_ints(self, fixed(self, OS_LINES), latest, 5))) == NULL)
        goto done;
    result = PyTuple_Pack(3, customer, order, lines);
done:
    Py_XDECREF(customer);
    Py_XDECREF(order);
    Py_XDECREF(lines);
    return result;
}

/* -- Delivery (2.7.4.2) -- */

/* Step a bound statement to its end: the number of rows it gave (-1 on an error), the first row's first column in
 * *value and whether it was not NULL in *present. */
static int first_int(Profiles *self, sqlite3_stmt *stmt, long long *value, int *present) {
    if (stmt == NULL) return -1;
    int rc, rows = 0;
    *value = 0;
    *present = 0;
    while ((rc = self->lib.step(stmt)) == SQLITE_ROW)
        if (rows++ == 0 && self->lib.column_type(stmt, 0) != SQLITE_NULL) {
            *value = self->lib.column_int64(stmt, 0);
            *present = 1;
        }
    if (rc != SQLITE_DONE) return failed(self, stmt), -1;
    self->lib.reset(stmt);
    return rows;
}

/* Each district's oldest new order, locked with the transaction (0: none: the district is skipped). */
static int oldest_orders(Profiles *self, long long w_id, long long found[DISTRICTS + 1]) {
    for (long long d_id = 1; d_id <= DISTRICTS; d_id++) {
        long long key[] = {w_id, d_id};
        int present;
        if (first_int(self, with_ints(self, fixed(self, DL_OLDEST), key, 2), &found[d_id], &present) < 0) return -1;
    }
    return 0;
}

/* One district's order delivered: its new order deleted, its carrier set, its lines delivered and summed; its
 * customer and amount, to pay once every order is delivered. */
static int deliver_order(Profiles *self, long long carrier, long long w_id, long long d_id, long long o_id,
                         long long *c_id, long long *amount) {
    long long key[] = {w_id, d_id, o_id}, carried[] = {carrier, w_id, d_id, o_id}, no_o_id, none;
    int deleted, has_customer, summed, lines;
    if ((deleted = first_int(self, with_ints(self, fixed(self, DL_DELETE), key, 3), &no_o_id, &lines)) < 0 ||
        first_int(self, with_ints(self, fixed(self, DL_CARRIER), carried, 4), c_id, &has_customer) < 0 ||
        first_int(self, with_ints(self, fixed(self, DL_LINES), key, 3), &none, &lines) < 0 ||
        first_int(self, with_ints(self, fixed(self, DL_AMOUNT), key, 3), amount, &summed) < 0)
        return -1;
    if (!deleted || !has_customer || !summed) {
        PyErr_Format(PyExc_RuntimeError, "the new order %lld of district %lld vanished under its lock", o_id, d_id);
        return -1;
    }
    return 0;
}

/* delivery(w_id, carrier_id): the O_ID delivered in districts 1..10, None where skipped (2.7.4.2). */
static PyObject *delivery(Profiles *self, PyObject *args) {
    long long w_id, carrier, found[DISTRICTS + 1], customers[DISTRICTS + 1], amounts[DISTRICTS + 1];
    if (!PyArg_ParseTuple(args, "LL", &w_id, &carrier) || oldest_orders(self, w_id, found) < 0) return NULL;
    for (long long d_id = 1; d_id <= DISTRICTS; d_id++)
        if (found[d_id] && deliver_order(self, carrier, w_id, d_id, found[d_id], &customers[d_id], &amounts[d_id]) < 0)
            return NULL;
    for (long long d_id = 1; d_id <= DISTRICTS; d_id++) {
        long long values[] = {amounts[d_id], w_id, d_id, customers[d_id]};
        if (found[d_id] && run(self, with_ints(self, fixed(self, DL_CUSTOMER), values, 4)) < 0) return NULL;
    }
    PyObject *delivered = PyTuple_New(DISTRICTS);
    for (int d_id = 1; delivered != NULL && d_id <= DISTRICTS; d_id++) {
        PyObject *o_id = found[d_id] ? PyLong_FromLongLong(found[d_id]) : Py_NewRef(Py_None);
        if (o_id == NULL) Py_CLEAR(delivered);
        else PyTuple_SET_ITEM(delivered, d_id - 1, o_id);
    }
    return delivered;
}

/* -- Stock-Level (2.8.2.2) -- */

/* stock_level(w_id, d_id, threshold): the items of the district's last 20 orders with less stock. */
static PyObject *stock_level(Profiles *self, PyObject *args) {
    long long key[3];
    if (!PyArg_ParseTuple(args, "LLL", &key[0], &key[1], &key[2])) return NULL;
    PyObject *row = first_row(self, with_ints(self, fixed(self, SL_LOW), key, 3), "stock level's count");
    if (row == NULL) return NULL;
    PyObject *low = Py_NewRef(PyTuple_GET_ITEM(row, 0));
    Py_DECREF(row);
    return low;
}

/* -- the type -- */

static int Profiles_init(Profiles *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"handle", "functions", "texts", "set_text", NULL};
    unsigned long long handle;
    PyObject *functions, *texts, *set_text;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "KO!O!O", keywords, &handle, &PyTuple_Type, &functions,
                                     &PyDict_Type, &texts, &set_text))
        return -1;
    if (self->db != NULL) {  /* its statements are that connection's */
        PyErr_SetString(PyExc_TypeError, "Profiles are made once, for one connection");
        return -1;
    }
    if (PyTuple_GET_SIZE(functions) != LIBRARY_FUNCTIONS || handle == 0 || !PyCallable_Check(set_text)) {
        PyErr_Format(PyExc_ValueError, "expected a connection's handle, %zd function addresses and a callable",
                     LIBRARY_FUNCTIONS);
        return -1;
    }
    void (**table)(void) = (void (**)(void))&self->lib;
    for (Py_ssize_t n = 0; n < LIBRARY_FUNCTIONS; n++) {
        void *address = PyLong_AsVoidPtr(PyTuple_GET_ITEM(functions, n));
        if (address == NULL) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a function address is 0");
            return -1;
        }
        memcpy(&table[n], &address, sizeof address);
    }
    self->db = (sqlite3 *)(uintptr_t)handle;
    Py_XSETREF(self->texts, Py_NewRef(texts));
    Py_XSETREF(self->set_text, Py_NewRef(set_text));
    return 0;
}

/* The statements are finalized with their object: Python's sqlite3 module closes its connection with
 * sqlite3_close_v2, which waits for them. */
static void Profiles_dealloc(Profiles *self) {
    if (self->lib.finalize != NULL) {
        for (int n = 0; n < FIXED; n++) self->lib.finalize(self->fixed[n]);
        for (int kind = 0; kind < SET_KINDS; kind++)
            for (int district = 0; district <= DISTRICTS; district++)
                for (int count = 0; count <= MAX_LINES; count++) self->lib.finalize(self->set_wise[kind][district][count]);
    }
    Py_XDECREF(self->texts);
    Py_XDECREF(self->set_text);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Profiles_methods[] = {
    {"new_order", (PyCFunction)new_order, METH_VARARGS, "New-Order's statements (2.4.2.2)."},
    {"payment", (PyCFunction)payment, METH_VARARGS, "Payment's statements (2.5.2.2)."},
    {"order_status", (PyCFunction)order_status, METH_VARARGS, "Order-Status's statements (2.6.2.2)."},
    {"delivery", (PyCFunction)delivery, METH_VARARGS, "Delivery's statements (2.7.4.2)."},
    {"stock_level", (PyCFunction)stock_level, METH_VARARGS, "Stock-Level's statement (2.8.2.2)."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ProfilesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "maximus.workloads.tpcc._sqlite_profiles.Profiles",
    .tp_basicsize = sizeof(Profiles),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TPC-C's profiles on one SQLite connection: Profiles(handle, functions, texts, set_text).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Profiles_init,
    .tp_dealloc = (destructor)Profiles_dealloc,
    .tp_methods = Profiles_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_sqlite_profiles", "TPC-C's transaction profiles in C on a SQLite connection.", -1, NULL,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__sqlite_profiles(void) {
    if (PyType_Ready(&ProfilesType) < 0) return NULL;
    PyObject *self = PyModule_Create(&module);
    if (self == NULL) return NULL;
    Error = PyErr_NewExceptionWithDoc("maximus.workloads.tpcc._sqlite_profiles.Error",
                                      "A statement failed: (extended error code, SQLite's message).", NULL, NULL);
    if (Error == NULL || PyModule_AddObjectRef(self, "Error", Error) < 0 ||
        PyModule_AddObjectRef(self, "Profiles", (PyObject *)&ProfilesType) < 0 ||
        PyModule_AddObject(self, "FUNCTIONS", Py_BuildValue("n", LIBRARY_FUNCTIONS)) < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return self;
}
