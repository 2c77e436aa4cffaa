/* TPC-C's transaction profiles (clause 2) in C, over a statement backend (_profiles.h): SQLite's connection
 * (_profiles_sqlite.h), libpq's (_profiles_libpq.h) or libmariadb's (_profiles_mariadb.h). The statements are those of the Python reference
 * (new_order.py, payment.py, order_status.py, delivery.py, stock_level.py), their texts given by it, run in the
 * same order with the same parameters, in the same batches (``Session.batch``), in the caller's transaction. Python
 * stays the reference and the fallback; native.py builds the screens from what these functions return, and the
 * tests hold the two to each other.
 *
 * Why C: in Python each statement's parameters, the driver's layer, the rows made into Python values and the
 * arithmetic between them cost the client more than the statements themselves (docs/internals.md). Here each
 * statement is prepared once per connection, and nothing becomes a Python object unless a screen is asked for. */
#include "_profiles_sqlite.h"
#include "_profiles_libpq.h"
#include "_profiles_mariadb.h"

static const Backend *BACKENDS[] = {&SQLITE_BACKEND, &LIBPQ_BACKEND, &MARIADB_BACKEND};

/* The statements of fixed text, by the names native.py gives them. */
enum {
    NO_CUSTOMER, NO_DISTRICT, NO_NEXT_ORDER, NO_ORDER, NO_NEW_ORDER,
    PAY_WAREHOUSE, PAY_DISTRICT, PAY_CUSTOMER, PAY_BY_NAME, PAY_GOOD_CREDIT, PAY_BAD_CREDIT, PAY_HISTORY,
    OS_BY_NAME, OS_CUSTOMER, OS_ORDER, OS_LINES,
    DL_OLDEST, DL_DELETE, DL_CARRIER, DL_LINES, DL_AMOUNT, DL_CUSTOMER,
    SL_LOW,
    FIXED_COUNT
};
_Static_assert(FIXED_COUNT == FIXED, "_profiles.h counts the fixed statements");
static const char *FIXED_NAMES[FIXED] = {
    "new_order.customer", "new_order.district", "new_order.next_order", "new_order.order", "new_order.new_order",
    "payment.warehouse", "payment.district", "payment.customer", "payment.by_name", "payment.good_credit",
    "payment.bad_credit", "payment.history",
    "order_status.by_name", "order_status.customer", "order_status.order", "order_status.lines",
    "delivery.oldest", "delivery.delete", "delivery.carrier", "delivery.lines", "delivery.amount", "delivery.customer",
    "stock_level.low",
};

/* A New-Order's statements over a set of rows, one text per kind, district and row count (new_order.py's SQL). */
enum { SET_ITEMS, SET_STOCK, SET_RESTOCK, SET_LINES };
static const char *SET_NAMES[SET_KINDS] = {"items", "stock", "restock", "lines"};
#define TEXT_SIZE 64     /* the longest text kept between two statements: I_DATA and S_DATA, 50 characters */

typedef struct {
    PyObject_HEAD
    const Backend *backend;
    void *state;
    char prepared[STATEMENTS];
    PyObject *texts;      /* dict: the fixed statements' texts (or Splits' parts: prepared_text) by name */
    PyObject *set_text;   /* callable (kind, district, count) -> text, or a Split's parts */
    int failed;           /* a statement of the batch being queued failed: the error is set */
    int queued;           /* statements in the batch being queued, at most MAX_QUEUED (_profiles.h) */
    PyObject *begin;      /* the transaction's BEGIN, to send with its first batch (bytes), or NULL */
    int commit;           /* send COMMIT with the transaction's last batch */
    int committed;        /* its last batch committed it */
} Profiles;

/* -- statements and batches -- */

/* A Split's parts as native.py hands them over, (sql, takes, returns) each, read into ``parts`` and ``taken`` (the
 * parts' takes, one after another, sized by the caller). */
static int read_parts(PyObject *form, SplitPart *parts, int *taken) {
    for (Py_ssize_t n = 0; n < PyTuple_GET_SIZE(form); n++) {
        PyObject *part = PyTuple_GET_ITEM(form, n), *takes = PyTuple_GET_ITEM(part, 1);
        parts[n].sql = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(part, 0), &parts[n].length);
        parts[n].returns = PyObject_IsTrue(PyTuple_GET_ITEM(part, 2));
        if (parts[n].sql == NULL || parts[n].returns < 0) return -1;
        parts[n].takes = taken;
        parts[n].take_count = (int)PyTuple_GET_SIZE(takes);
        for (Py_ssize_t t = 0; t < PyTuple_GET_SIZE(takes); t++) {
            long position = PyLong_AsLong(PyTuple_GET_ITEM(takes, t));
            if (position < 0 || position > INT_MAX) {  /* the backend checks it against each call's parameters */
                if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "a part takes parameter %ld", position);
                return -1;
            }
            *taken++ = (int)position;
        }
    }
    return 0;
}

/* The number of parameters a Split's parts take in all, -1 (TypeError) when it is not a tuple of (sql, takes,
 * returns) parts. */
static Py_ssize_t split_takes(PyObject *form) {
    Py_ssize_t takes = 0;
    for (Py_ssize_t n = 0; n < PyTuple_GET_SIZE(form); n++) {
        PyObject *part = PyTuple_GET_ITEM(form, n);
        if (!PyTuple_Check(part) || PyTuple_GET_SIZE(part) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(part, 0)) ||
            !PyTuple_Check(PyTuple_GET_ITEM(part, 1))) {
            PyErr_SetString(PyExc_TypeError, "a split statement is a tuple of (sql, takes, returns) parts");
            return -1;
        }
        takes += PyTuple_GET_SIZE(PyTuple_GET_ITEM(part, 1));
    }
    return PyTuple_GET_SIZE(form) ? takes : (PyErr_SetString(PyExc_ValueError, "a split without parts"), -1);
}

static int prepared_split(Profiles *self, int slot, PyObject *form) {
    if (self->backend->prepare_split == NULL) {  /* its dialect writes every statement as one */
        PyErr_Format(PyExc_TypeError, "the %s backend takes no split statements", self->backend->library);
        return -1;
    }
    Py_ssize_t takes = split_takes(form);
    if (takes < 0) return -1;
    SplitPart *parts = PyMem_Calloc((size_t)PyTuple_GET_SIZE(form), sizeof(SplitPart));
    int *taken = PyMem_Calloc((size_t)takes + 1, sizeof(int));
    int failed = parts == NULL || taken == NULL ? (PyErr_NoMemory(), -1) : read_parts(form, parts, taken);
    if (!failed) failed = self->backend->prepare_split(self->state, slot, parts, (int)PyTuple_GET_SIZE(form));
    PyMem_Free(parts);
    PyMem_Free(taken);
    return failed;
}

/* A statement prepared in its slot: its text (str), or a Split's parts (a tuple: native.py's form). */
static int prepared_text(Profiles *self, int slot, PyObject *form) {
    Py_ssize_t length;
    const char *sql = PyTuple_Check(form) ? NULL : PyUnicode_AsUTF8AndSize(form, &length);
    int failed = PyTuple_Check(form) ? prepared_split(self, slot, form)
                 : sql == NULL ? -1 : self->backend->prepare(self->state, slot, sql, length);
    if (failed) return -1;
    self->prepared[slot] = 1;
    return slot;
}

/* A fixed statement's slot, prepared at its first use; -1 with the error set. */
static int fixed(Profiles *self, int which) {
    if (self->failed) return -1;  /* the batch's failure stays the error: nothing more is prepared */
    if (self->prepared[which]) return which;
    PyObject *text = PyDict_GetItemString(self->texts, FIXED_NAMES[which]);
    if (text == NULL) {
        PyErr_Format(PyExc_KeyError, "no text for the statement %s", FIXED_NAMES[which]);
        return -1;
    }
    return prepared_text(self, which, text);
}

static int set_wise(Profiles *self, int kind, int district, int count) {
    if (self->failed) return -1;  /* as ``fixed``: set_text is not called with the failure's error set */
    if (district < 0 || district > DISTRICTS || count < 1 || count > MAX_LINES) {
        PyErr_Format(PyExc_ValueError, "no %s statement for district %d and %d rows", SET_NAMES[kind], district,
                     count);
        return -1;
    }
    int slot = FIXED + (kind * (DISTRICTS + 1) + district) * (MAX_LINES + 1) + count;
    if (self->prepared[slot]) return slot;
    PyObject *text = PyObject_CallFunction(self->set_text, "sii", SET_NAMES[kind], district, count);
    if (text == NULL) return -1;
    slot = prepared_text(self, slot, text);
    Py_DECREF(text);
    return slot;
}

/* A new batch: the last one's results forgotten. */
static void start(Profiles *self) {
    self->backend->clear(self->state);
    self->failed = self->queued = 0;
}

/* A statement queued in the batch; after a failure nothing more is (the error stays set until ``send``). */
static void queue(Profiles *self, int slot, const Param *params, int count) {
    if (self->failed) return;
    if (self->queued == MAX_QUEUED) {  /* the backends' results are kept in arrays of this size */
        PyErr_Format(PyExc_ValueError, "more than %d statements in one batch", MAX_QUEUED);
        self->failed = 1;
        return;
    }
    if (slot < 0 || self->backend->queue(self->state, slot, params, count) < 0) self->failed = 1;
    else self->queued++;
}

#define PARAMS(...) (const Param[]){__VA_ARGS__}, (int)(sizeof((const Param[]){__VA_ARGS__}) / sizeof(Param))
#define INT(v) ((Param){PARAM_INT, (v), NULL})
#define MONEY(v) ((Param){PARAM_MONEY, (v), NULL})
#define TEXT(t) ((Param){PARAM_TEXT, 0, (t)})

/* The batch's results ready; ``last``: the transaction's last batch (COMMIT goes with it where the session left
 * it to the profile). 0, or -1 with the first failure raised. */
static int send(Profiles *self, int last) {
    if (self->failed) return -1;
    PyObject *begin = self->begin;
    self->begin = NULL;  /* sent, or failed with the batch: the caller rolls back */
    int commit = last && self->commit;
    int failed = self->backend->send(self->state, begin, commit);
    Py_XDECREF(begin);
    if (!failed && commit) self->committed = 1;
    return failed;
}

static int rows(Profiles *self, int k) {
    return self->backend->rows(self->state, k);
}

static long long integer(Profiles *self, int k, int row, int column) {
    return self->backend->integer(self->state, k, row, column);
}

static long long cents(Profiles *self, int k, int row, int column) {
    return self->backend->cents(self->state, k, row, column);
}

static PyObject *value(Profiles *self, int k, int row, int column) {
    return self->backend->value(self->state, k, row, column);
}

/* A row as the Python driver gives it. */
static PyObject *row_tuple(Profiles *self, int k, int row) {
    int count = self->backend->columns(self->state, k);
    PyObject *tuple = PyTuple_New(count);
    for (int n = 0; tuple != NULL && n < count; n++) {
        PyObject *item = value(self, k, row, n);
        if (item == NULL) Py_CLEAR(tuple);
        else PyTuple_SET_ITEM(tuple, n, item);
    }
    return tuple;
}

static PyObject *all_rows(Profiles *self, int k) {
    int count = rows(self, k);
    PyObject *list = PyList_New(count);
    for (int n = 0; list != NULL && n < count; n++) {
        PyObject *row = row_tuple(self, k, n);
        if (row == NULL) Py_CLEAR(list);
        else PyList_SET_ITEM(list, n, row);
    }
    return list;
}

/* A statement that must have returned a row: -1 with LookupError without one. */
static int one_row(Profiles *self, int k, const char *what) {
    if (rows(self, k) > 0) return 0;
    PyErr_Format(PyExc_LookupError, "no %s: the database is not a TPC-C database of this scale", what);
    return -1;
}

/* A text column copied out (the backend's is good until the next batch); -1 with ValueError when it does not fit. */
static int copy_text(Profiles *self, int k, int row, int column, char out[TEXT_SIZE]) {
    int length;
    const char *text = self->backend->text(self->state, k, row, column, &length);
    if (length >= TEXT_SIZE) {
        PyErr_Format(PyExc_ValueError, "a text of %d bytes where TPC-C has at most %d", length, TEXT_SIZE - 1);
        return -1;
    }
    memcpy(out, text, (size_t)length);
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

/* What the order reads, in one batch: the customer's discount, name and credit with the warehouse's tax, the
 * district's next order number and tax, then the items and the stock rows, locked. */
static void queue_reads(Profiles *self, Order *order) {
    Param keys[2 * MAX_LINES];
    queue(self, fixed(self, NO_CUSTOMER), PARAMS(INT(order->w_id), INT(order->d_id), INT(order->c_id)));
    queue(self, fixed(self, NO_DISTRICT), PARAMS(INT(order->w_id), INT(order->d_id)));
    for (int n = 0; n < order->item_count; n++) keys[n] = INT(order->items[n].i_id);
    queue(self, set_wise(self, SET_ITEMS, 0, order->item_count), keys, order->item_count);
    for (int n = 0; n < order->stock_count; n++) {
        keys[2 * n] = INT(order->stocks[n].i_id);
        keys[2 * n + 1] = INT(order->stocks[n].w_id);
    }
    queue(self, set_wise(self, SET_STOCK, (int)order->d_id, order->stock_count), keys, 2 * order->stock_count);
}

/* The items' prices, names and data (result ``k``): the number found (fewer than asked: an unused item, 2.4.2.3),
 * or -1. */
static int read_items(Profiles *self, Order *order, int k) {
    int found = 0;
    for (int row = 0; row < rows(self, k); row++) {
        Item *item = item_of(order, integer(self, k, row, 0));
        if (item == NULL || item->found) continue;
        item->found = 1;
        item->price = cents(self, k, row, 1);
        if (copy_text(self, k, row, 2, item->name) < 0 || copy_text(self, k, row, 3, item->data) < 0) return -1;
        found++;
    }
    return found;
}

/* The stock rows (result ``k``): their quantities, data and district information. */
static int read_stock(Profiles *self, Order *order, int k) {
    for (int row = 0; row < rows(self, k); row++) {
        Stock *stock = stock_of(order, integer(self, k, row, 0), integer(self, k, row, 1));
        if (stock == NULL) continue;
        stock->found = 1;
        stock->quantity = integer(self, k, row, 2);
        if (copy_text(self, k, row, 3, stock->data) < 0 || copy_text(self, k, row, 4, stock->dist_info) < 0)
            return -1;
    }
    return 0;
}

/* Each line in order takes its quantity from its stock row (2.4.2.2: restocked by 91 when fewer than 10 would
 * remain), so an item ordered twice from one warehouse counts twice; the screen's line: (I_NAME, I_PRICE,
 * S_QUANTITY after the line, brand-generic, OL_AMOUNT), or None when no screen is asked for. */
static PyObject *take_lines(Order *order, int screen) {
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
    return shown;
}

/* What the order writes, in one batch that ends the transaction: the district's next number, the order (its entry
 * date returned), the new order, the stock rows and the lines. */
static void queue_writes(Profiles *self, Order *order, long long o_id) {
    int all_local = 1;
    for (int n = 0; n < order->line_count; n++) all_local &= order->lines[n].supply == order->w_id;
    queue(self, fixed(self, NO_NEXT_ORDER), PARAMS(INT(o_id + 1), INT(order->w_id), INT(order->d_id)));
    queue(self, fixed(self, NO_ORDER), PARAMS(INT(o_id), INT(order->d_id), INT(order->w_id), INT(order->c_id),
                                              INT(order->line_count), INT(all_local)));
    queue(self, fixed(self, NO_NEW_ORDER), PARAMS(INT(o_id), INT(order->d_id), INT(order->w_id)));
    Param values[9 * MAX_LINES];
    for (int n = 0; n < order->changed_count; n++) {
        const Stock *stock = &order->stocks[order->changed[n]];
        Param *row = &values[6 * n];
        row[0] = INT(stock->i_id), row[1] = INT(stock->w_id), row[2] = INT(stock->quantity);
        row[3] = INT(stock->ytd), row[4] = INT(stock->order_cnt), row[5] = INT(stock->remote_cnt);
    }
    queue(self, set_wise(self, SET_RESTOCK, 0, order->changed_count), values, 6 * order->changed_count);
    for (int n = 0; n < order->line_count; n++) {
        const Line *line = &order->lines[n];
        const Item *item = item_of(order, line->i_id);
        const Stock *stock = stock_of(order, line->i_id, line->supply);
        Param *row = &values[9 * n];
        row[0] = INT(o_id), row[1] = INT(order->d_id), row[2] = INT(order->w_id), row[3] = INT(n + 1);
        row[4] = INT(line->i_id), row[5] = INT(line->supply), row[6] = INT(line->quantity);
        row[7] = MONEY(line->quantity * item->price), row[8] = TEXT(stock->dist_info);
    }
    queue(self, set_wise(self, SET_LINES, 0, order->line_count), values, 9 * order->line_count);
}

/* The screen's head as read in the first batch: (C_DISCOUNT, C_LAST, C_CREDIT, W_TAX, D_TAX). */
static PyObject *order_head(Profiles *self) {
    PyObject *customer = row_tuple(self, 0, 0), *d_tax = value(self, 1, 0, 1), *head = NULL;
    if (customer != NULL && d_tax != NULL)
        head = Py_BuildValue("(OOOOO)", PyTuple_GET_ITEM(customer, 0), PyTuple_GET_ITEM(customer, 1),
                             PyTuple_GET_ITEM(customer, 2), PyTuple_GET_ITEM(customer, 3), d_tax);
    Py_XDECREF(customer);
    Py_XDECREF(d_tax);
    return head;
}

/* new_order(w_id, d_id, c_id, item_ids, supply_w_ids, quantities, screen): None when an item is unused (2.4.2.3:
 * the caller rolls back), else, with screen, (C_DISCOUNT, C_LAST, C_CREDIT, W_TAX, D_TAX, O_ID, O_ENTRY_D, lines),
 * without, True. */
static PyObject *new_order(Profiles *self, PyObject *args) {
    Order order;
    memset(&order, 0, sizeof order);
    PyObject *items, *supplies, *quantities, *head = NULL, *lines = NULL, *result = NULL;
    int screen;
    if (!PyArg_ParseTuple(args, "LLLOOOp", &order.w_id, &order.d_id, &order.c_id, &items, &supplies, &quantities,
                          &screen) ||
        read_lines(&order, items, supplies, quantities) < 0)
        return NULL;
    sort_keys(&order);
    start(self);
    queue_reads(self, &order);
    if (send(self, 0) < 0 || one_row(self, 0, "customer") < 0 || one_row(self, 1, "district") < 0) return NULL;
    int found = read_items(self, &order, 2);
    if (found < 0 || read_stock(self, &order, 3) < 0) return NULL;
    if (found < order.item_count) Py_RETURN_NONE;  /* 2.4.2.3: the caller rolls back */
    long long o_id = integer(self, 1, 0, 0);
    if ((screen && (head = order_head(self)) == NULL) || (lines = take_lines(&order, screen)) == NULL) goto done;
    start(self);
    queue_writes(self, &order, o_id);
    if (send(self, 1) < 0 || one_row(self, 1, "order's entry date") < 0) goto done;
    if (!screen) {
        result = Py_NewRef(Py_True);
        goto done;
    }
    PyObject *entered = value(self, 1, 0, 0);
    if (entered != NULL)
        result = Py_BuildValue("(OOOOOLNO)", PyTuple_GET_ITEM(head, 0), PyTuple_GET_ITEM(head, 1),
                               PyTuple_GET_ITEM(head, 2), PyTuple_GET_ITEM(head, 3), PyTuple_GET_ITEM(head, 4), o_id,
                               entered, lines);
done:
    Py_XDECREF(head);
    Py_XDECREF(lines);
    return result;
}

/* -- Payment (2.5.2.2) -- */

/* The customer a Payment or Order-Status names by last name (2.5.2.2, 2.6.2.2), of the namesakes (result ``k``)
 * sorted by C_FIRST: the row of the one at ceil(n/2), or -1 with LookupError when there is none. */
static int middle(Profiles *self, int k, long long w_id, long long d_id, const char *last) {
    int count = rows(self, k);
    if (count == 0) {
        PyErr_Format(PyExc_LookupError, "no customer named %s in warehouse %lld district %lld", last, w_id, d_id);
        return -1;
    }
    return (count - 1) / 2;
}

typedef struct {
    long long w_id, d_id, c_w_id, c_d_id, c_id, paid;
    const char *last;  /* NULL: the customer is chosen by number */
    int screen;
    char w_name[TEXT_SIZE], d_name[TEXT_SIZE];
    PyObject *warehouse, *district, *customer, *data, *date;  /* the screen's, with screen */
} Paying;

/* The first batch: the warehouse's and the district's YTD raised by the payment, each row read as it is changed
 * (RETURNING), and the customer read (locked) by number, or the namesakes; the customer's number. */
static int pay_first(Profiles *self, Paying *pay) {
    start(self);
    queue(self, fixed(self, PAY_WAREHOUSE), PARAMS(MONEY(pay->paid), INT(pay->w_id)));
    queue(self, fixed(self, PAY_DISTRICT), PARAMS(MONEY(pay->paid), INT(pay->w_id), INT(pay->d_id)));
    if (pay->last == NULL)
        queue(self, fixed(self, PAY_CUSTOMER), PARAMS(INT(pay->c_w_id), INT(pay->c_d_id), INT(pay->c_id)));
    else
        queue(self, fixed(self, PAY_BY_NAME), PARAMS(INT(pay->c_w_id), INT(pay->c_d_id), TEXT(pay->last)));
    if (send(self, 0) < 0 || one_row(self, 0, "warehouse") < 0 || one_row(self, 1, "district") < 0 ||
        copy_text(self, 0, 0, 0, pay->w_name) < 0 || copy_text(self, 1, 0, 0, pay->d_name) < 0)
        return -1;
    if (pay->screen && ((pay->warehouse = row_tuple(self, 0, 0)) == NULL ||
                        (pay->district = row_tuple(self, 1, 0)) == NULL))
        return -1;
    if (pay->last != NULL) {
        int row = middle(self, 2, pay->c_w_id, pay->c_d_id, pay->last);
        if (row < 0) return -1;
        pay->c_id = integer(self, 2, row, 0);
    }
    return 0;
}

/* The customer's row (result ``k``) as read before the payment: whether their credit is bad. */
static int read_customer(Profiles *self, Paying *pay, int k) {
    char credit[TEXT_SIZE];
    if (one_row(self, k, "customer") < 0 || copy_text(self, k, 0, 10, credit) < 0) return -1;
    if (pay->screen && (pay->customer = row_tuple(self, k, 0)) == NULL) return -1;
    return strcmp(credit, "BC") == 0;
}

/* The second batch, which ends the transaction: the customer pays (with bad credit, the payment's entry at the
 * head of C_DATA, whose start is returned), and the history records it. */
static int pay_last(Profiles *self, Paying *pay, int bad_credit) {
    char entry[160], data[2 * TEXT_SIZE + 8];
    start(self);
    if (!bad_credit) {
        queue(self, fixed(self, PAY_GOOD_CREDIT), PARAMS(MONEY(pay->paid), MONEY(pay->paid), INT(pay->c_w_id),
                                                         INT(pay->c_d_id), INT(pay->c_id)));
    } else {
        snprintf(entry, sizeof entry, "%lld %lld %lld %lld %lld %lld.%02lld ", pay->c_id, pay->c_d_id, pay->c_w_id,
                 pay->d_id, pay->w_id, pay->paid / 100, pay->paid % 100);
        queue(self, fixed(self, PAY_BAD_CREDIT), PARAMS(MONEY(pay->paid), MONEY(pay->paid), TEXT(entry),
                                                        INT(pay->c_w_id), INT(pay->c_d_id), INT(pay->c_id)));
    }
    snprintf(data, sizeof data, "%s    %s", pay->w_name, pay->d_name);
    queue(self, fixed(self, PAY_HISTORY), PARAMS(INT(pay->c_id), INT(pay->c_d_id), INT(pay->c_w_id), INT(pay->d_id),
                                                 INT(pay->w_id), MONEY(pay->paid), TEXT(data)));
    if (send(self, 1) < 0 || (bad_credit && one_row(self, 0, "customer's data") < 0) ||
        one_row(self, 1, "history's date") < 0)
        return -1;
    if (!pay->screen) return 0;
    pay->data = bad_credit ? value(self, 0, 0, 0) : Py_NewRef(Py_None);
    pay->date = value(self, 1, 0, 0);
    return pay->data == NULL || pay->date == NULL ? -1 : 0;
}

/* payment(w_id, d_id, c_w_id, c_d_id, c_id or None, c_last or None, amount in cents, screen): with screen,
 * (C_ID, the warehouse's row, the district's, the customer's as read, C_DATA's start or None, H_DATE), else True. */
static PyObject *payment(Profiles *self, PyObject *args) {
    Paying pay;
    memset(&pay, 0, sizeof pay);
    PyObject *given_id, *given_last, *result = NULL;
    if (!PyArg_ParseTuple(args, "LLLLOOLp", &pay.w_id, &pay.d_id, &pay.c_w_id, &pay.c_d_id, &given_id, &given_last,
                          &pay.paid, &pay.screen))
        return NULL;
    if (given_id == Py_None ? (pay.last = PyUnicode_AsUTF8(given_last)) == NULL
                            : (pay.c_id = PyLong_AsLongLong(given_id)) == -1 && PyErr_Occurred())
        return NULL;
    if (pay_first(self, &pay) < 0) goto done;
    int bad_credit;
    if (pay.last == NULL) {
        bad_credit = read_customer(self, &pay, 2);
    } else {  /* the customer chosen by name, read (locked) in a batch of its own, as Session.fetchone reads it */
        start(self);
        queue(self, fixed(self, PAY_CUSTOMER), PARAMS(INT(pay.c_w_id), INT(pay.c_d_id), INT(pay.c_id)));
        bad_credit = send(self, 0) < 0 ? -1 : read_customer(self, &pay, 0);
    }
    if (bad_credit < 0 || pay_last(self, &pay, bad_credit) < 0) goto done;
    result = pay.screen ? Py_BuildValue("(LOOOOO)", pay.c_id, pay.warehouse, pay.district, pay.customer, pay.data,
                                        pay.date)
                        : Py_NewRef(Py_True);
done:
    Py_XDECREF(pay.warehouse);
    Py_XDECREF(pay.district);
    Py_XDECREF(pay.customer);
    Py_XDECREF(pay.data);
    Py_XDECREF(pay.date);
    return result;
}

/* -- Order-Status (2.6.2.2) -- */

/* order_status(w_id, d_id, c_id or None, c_last or None, screen): with screen, (the customer's row, the latest
 * order's rows, its lines' rows), else True. */
static PyObject *order_status(Profiles *self, PyObject *args) {
    long long w_id, d_id, c_id = 0;
    PyObject *given_id, *given_last, *customer = NULL, *order = NULL, *lines = NULL, *result = NULL;
    int screen;
    if (!PyArg_ParseTuple(args, "LLOOp", &w_id, &d_id, &given_id, &given_last, &screen)) return NULL;
    if (given_id == Py_None) {  /* the namesakes' rows, all read in a batch of their own; the middle one's */
        const char *last = PyUnicode_AsUTF8(given_last);
        if (last == NULL) return NULL;
        start(self);
        queue(self, fixed(self, OS_BY_NAME), PARAMS(INT(w_id), INT(d_id), TEXT(last)));
        int row = send(self, 0) < 0 ? -1 : middle(self, 0, w_id, d_id, last);
        if (row < 0 || (screen && (customer = row_tuple(self, 0, row)) == NULL)) return NULL;
        c_id = integer(self, 0, row, 0);
    } else if ((c_id = PyLong_AsLongLong(given_id)) == -1 && PyErr_Occurred()) {
        return NULL;
    }
    int by_id = given_id != Py_None;
    start(self);
    if (by_id) queue(self, fixed(self, OS_CUSTOMER), PARAMS(INT(w_id), INT(d_id), INT(c_id)));
    queue(self, fixed(self, OS_ORDER), PARAMS(INT(w_id), INT(d_id), INT(c_id)));
    queue(self, fixed(self, OS_LINES), PARAMS(INT(w_id), INT(d_id), INT(w_id), INT(d_id), INT(c_id)));
    if (send(self, 1) < 0 || (by_id && one_row(self, 0, "customer") < 0)) goto done;
    if (!screen) {
        result = Py_NewRef(Py_True);
        goto done;
    }
    if ((by_id && (customer = row_tuple(self, 0, 0)) == NULL) || (order = all_rows(self, by_id)) == NULL ||
        (lines = all_rows(self, by_id + 1)) == NULL)
        goto done;
    result = PyTuple_Pack(3, customer, order, lines);
done:
    Py_XDECREF(customer);
    Py_XDECREF(order);
    Py_XDECREF(lines);
    return result;
}

/* -- Delivery (2.7.4.2) -- */

/* delivery(w_id, carrier_id): the O_ID delivered in districts 1..10, None where skipped (2.7.4.2). Three batches:
 * each district's oldest new order, locked; each one's order delivered (its new order deleted, its carrier set and
 * customer read, its lines delivered and summed); each one's customer paid. */
static PyObject *delivery(Profiles *self, PyObject *args) {
    long long w_id, carrier, found[DISTRICTS + 1] = {0}, customers[DISTRICTS + 1], amounts[DISTRICTS + 1];
    if (!PyArg_ParseTuple(args, "LL", &w_id, &carrier)) return NULL;
    start(self);
    for (long long d_id = 1; d_id <= DISTRICTS; d_id++)
        queue(self, fixed(self, DL_OLDEST), PARAMS(INT(w_id), INT(d_id)));
    if (send(self, 0) < 0) return NULL;
    for (int d_id = 1; d_id <= DISTRICTS; d_id++)  /* none: the district is skipped */
        if (rows(self, d_id - 1) > 0 && !self->backend->is_null(self->state, d_id - 1, 0, 0))
            found[d_id] = integer(self, d_id - 1, 0, 0);
    start(self);
    for (long long d_id = 1; d_id <= DISTRICTS; d_id++) {
        if (!found[d_id]) continue;
        queue(self, fixed(self, DL_DELETE), PARAMS(INT(w_id), INT(d_id), INT(found[d_id])));
        queue(self, fixed(self, DL_CARRIER), PARAMS(INT(carrier), INT(w_id), INT(d_id), INT(found[d_id])));
        queue(self, fixed(self, DL_LINES), PARAMS(INT(w_id), INT(d_id), INT(found[d_id])));
        queue(self, fixed(self, DL_AMOUNT), PARAMS(INT(w_id), INT(d_id), INT(found[d_id])));
    }
    if (send(self, 0) < 0) return NULL;
    for (int d_id = 1, k = 0; d_id <= DISTRICTS; d_id++) {  /* k: the district's first result */
        if (!found[d_id]) continue;
        if (rows(self, k) == 0 || rows(self, k + 1) == 0 || rows(self, k + 3) == 0 ||
            self->backend->is_null(self->state, k + 3, 0, 0))
            return PyErr_Format(PyExc_RuntimeError, "the new order %lld of district %d vanished under its lock",
                                found[d_id], d_id);
        customers[d_id] = integer(self, k + 1, 0, 0);
        amounts[d_id] = cents(self, k + 3, 0, 0);
        k += 4;
    }
    start(self);
    for (long long d_id = 1; d_id <= DISTRICTS; d_id++)
        if (found[d_id])
            queue(self, fixed(self, DL_CUSTOMER), PARAMS(MONEY(amounts[d_id]), INT(w_id), INT(d_id),
                                                         INT(customers[d_id])));
    if (send(self, 1) < 0) return NULL;
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
    long long w_id, d_id, threshold;
    if (!PyArg_ParseTuple(args, "LLL", &w_id, &d_id, &threshold)) return NULL;
    start(self);
    queue(self, fixed(self, SL_LOW), PARAMS(INT(w_id), INT(d_id), INT(threshold)));
    if (send(self, 1) < 0 || one_row(self, 0, "stock level's count") < 0) return NULL;
    return value(self, 0, 0, 0);
}

/* -- the transaction -- */

/* transaction(begin, commit): the next profile sends ``begin`` (bytes, or None) with its first batch and, with
 * ``commit``, COMMIT with its last: the session's BEGIN and COMMIT where it sends them with its statements. */
static PyObject *transaction(Profiles *self, PyObject *args) {
    PyObject *begin;
    int commit;
    if (!PyArg_ParseTuple(args, "Op", &begin, &commit)) return NULL;
    if (begin != Py_None && !PyBytes_Check(begin)) {
        PyErr_SetString(PyExc_TypeError, "a BEGIN is bytes, or None");
        return NULL;
    }
    Py_XSETREF(self->begin, begin == Py_None ? NULL : Py_NewRef(begin));
    self->commit = commit;
    self->committed = 0;
    Py_RETURN_NONE;
}

/* unsent(): whether the BEGIN given by ``transaction`` was never sent: the profile failed before its first batch,
 * and the session has a transaction to begin, not one to roll back. */
static PyObject *unsent(Profiles *self, PyObject *unused) {
    (void)unused;
    return PyBool_FromLong(self->begin != NULL);
}

/* committed(): whether the last profile's last batch committed its transaction. */
static PyObject *committed(Profiles *self, PyObject *unused) {
    (void)unused;
    return PyBool_FromLong(self->committed);
}

/* -- the type -- */

static const Backend *backend_of(const char *library) {
    for (size_t n = 0; n < sizeof BACKENDS / sizeof BACKENDS[0]; n++)
        if (strcmp(BACKENDS[n]->library, library) == 0) return BACKENDS[n];
    PyErr_Format(PyExc_ValueError, "no statement backend for the library %s", library);
    return NULL;
}

static int read_functions(const Backend *backend, PyObject *functions, void **table) {
    if (PyTuple_GET_SIZE(functions) != backend->functions) {
        PyErr_Format(PyExc_ValueError, "%s: expected %zd function addresses", backend->library, backend->functions);
        return -1;
    }
    for (Py_ssize_t n = 0; n < backend->functions; n++) {
        table[n] = PyLong_AsVoidPtr(PyTuple_GET_ITEM(functions, n));
        if (table[n] == NULL) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a function address is 0");
            return -1;
        }
    }
    return 0;
}

static int Profiles_init(Profiles *self, PyObject *args, PyObject *kwargs) {
    static char *keywords[] = {"library", "handle", "functions", "texts", "set_text", "load", NULL};
    const char *library;
    unsigned long long handle;
    PyObject *functions, *texts, *set_text, *load = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "sKO!O!O|O", keywords, &library, &handle, &PyTuple_Type,
                                     &functions, &PyDict_Type, &texts, &set_text, &load))
        return -1;
    if (self->backend != NULL) {  /* its statements are that connection's */
        PyErr_SetString(PyExc_TypeError, "Profiles are made once, for one connection");
        return -1;
    }
    const Backend *backend = backend_of(library);
    if (backend == NULL) return -1;
    if (handle == 0 || !PyCallable_Check(set_text)) {
        PyErr_SetString(PyExc_ValueError, "expected a connection's handle and a callable");
        return -1;
    }
    void **table = PyMem_Calloc((size_t)backend->functions, sizeof(void *));
    void *state = PyMem_Calloc(1, backend->size);
    int failed = table == NULL || state == NULL ? (PyErr_NoMemory(), -1)
                 : read_functions(backend, functions, table) < 0 ? -1
                 : backend->init(state, (uintptr_t)handle, table, load);
    PyMem_Free(table);
    if (failed) {
        PyMem_Free(state);
        return -1;
    }
    self->backend = backend;
    self->state = state;
    Py_XSETREF(self->texts, Py_NewRef(texts));
    Py_XSETREF(self->set_text, Py_NewRef(set_text));
    return 0;
}

static void Profiles_dealloc(Profiles *self) {
    if (self->backend != NULL) {
        self->backend->release(self->state);
        PyMem_Free(self->state);
    }
    Py_XDECREF(self->texts);
    Py_XDECREF(self->set_text);
    Py_XDECREF(self->begin);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef Profiles_methods[] = {
    {"new_order", (PyCFunction)new_order, METH_VARARGS, "New-Order's statements (2.4.2.2)."},
    {"payment", (PyCFunction)payment, METH_VARARGS, "Payment's statements (2.5.2.2)."},
    {"order_status", (PyCFunction)order_status, METH_VARARGS, "Order-Status's statements (2.6.2.2)."},
    {"delivery", (PyCFunction)delivery, METH_VARARGS, "Delivery's statements (2.7.4.2)."},
    {"stock_level", (PyCFunction)stock_level, METH_VARARGS, "Stock-Level's statement (2.8.2.2)."},
    {"transaction", (PyCFunction)transaction, METH_VARARGS, "The next profile's BEGIN and COMMIT, where it sends them."},
    {"committed", (PyCFunction)committed, METH_NOARGS, "Whether the last profile committed its transaction."},
    {"unsent", (PyCFunction)unsent, METH_NOARGS, "Whether the BEGIN given by transaction() was never sent."},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject ProfilesType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "maximus.workloads.tpcc._profiles.Profiles",
    .tp_basicsize = sizeof(Profiles),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "TPC-C's profiles on one connection: Profiles(library, handle, functions, texts, set_text, load).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Profiles_init,
    .tp_dealloc = (destructor)Profiles_dealloc,
    .tp_methods = Profiles_methods,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_profiles", "TPC-C's transaction profiles in C, on a SQLite, a libpq or a libmariadb connection.", -1,
    NULL, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__profiles(void) {
    if (PyType_Ready(&ProfilesType) < 0) return NULL;
    PyObject *self = PyModule_Create(&module);
    if (self == NULL) return NULL;
    Error = PyErr_NewExceptionWithDoc("maximus.workloads.tpcc._profiles.Error",
                                      "A statement failed: (the library's code for it, its message).", NULL, NULL);
    PyObject *functions = Py_BuildValue("{s:n,s:n,s:n}", SQLITE_BACKEND.library, SQLITE_BACKEND.functions,
                                        LIBPQ_BACKEND.library, LIBPQ_BACKEND.functions, MARIADB_BACKEND.library,
                                        MARIADB_BACKEND.functions);
    if (Error == NULL || functions == NULL || PyModule_AddObjectRef(self, "Error", Error) < 0 ||
        PyModule_AddObjectRef(self, "Profiles", (PyObject *)&ProfilesType) < 0 ||
        PyModule_AddObject(self, "FUNCTIONS", functions) < 0) {
        Py_XDECREF(functions);
        Py_DECREF(self);
        return NULL;
    }
    return self;
}
