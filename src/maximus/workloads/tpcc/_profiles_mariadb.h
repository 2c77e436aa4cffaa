/* The profiles' statement backend on a libmariadb connection (_profiles.h): the queued statements go to the server
 * as one multi-statement text query, after the transaction's BEGIN and before its COMMIT when the session left them
 * to it, each with its parameters written in as SQL literals, as MariaDBSession._statements sends a batch: one round
 * trip. The text protocol has no prepared statements (and the binary protocol cannot batch), so a statement is
 * "prepared" by being cut at its placeholders once, and each query is assembled from the pieces and the literals.
 * A Split (a logical statement MariaDB writes as several, workloads/statements.py) is one engine statement per part
 * in the query; its rows are its returning parts', gathered. The connection is MySQLdb's (its MYSQL *), the functions
 * those of the libmariadb it loaded, in the order of MariadbLibrary (native.py's list). */
#include "_profiles.h"

typedef struct st_mysql MYSQL;
typedef struct st_mysql_res MYSQL_RES;

/* libmariadb's MYSQL_FIELD (mysql.h), which no function reads for us: a column's type and character set, which tell
 * how MySQLdb makes its value Python's (``value``). */
typedef struct {
    char *name, *org_name, *table, *org_table, *db, *catalog, *def;
    unsigned long length, max_length;
    unsigned int name_length, org_name_length, table_length, org_table_length, db_length, catalog_length, def_length;
    unsigned int flags, decimals, charsetnr;
    int type;  /* enum enum_field_types */
    void *extension;
} MysqlField;

enum { FIELD_TINY = 1, FIELD_SHORT = 2, FIELD_LONG = 3, FIELD_LONGLONG = 8, FIELD_INT24 = 9, FIELD_YEAR = 13,
       FIELD_VARCHAR = 15, FIELD_TINY_BLOB = 249, FIELD_MEDIUM_BLOB = 250, FIELD_LONG_BLOB = 251,
       FIELD_BLOB = 252, FIELD_VAR_STRING = 253, FIELD_STRING = 254 };
#define BINARY_CHARSET 63  /* a string column of bytes: MySQLdb gives bytes, not str */
#define MAX_COLUMNS 32     /* a statement's columns: TPC-C's widest row (a customer's) has 21 */

typedef struct {
    int (*send_query)(MYSQL *, const char *, unsigned long);
    char (*read_query_result)(MYSQL *);  /* my_bool: nonzero on error */
    MYSQL_RES *(*store_result)(MYSQL *);
    char **(*fetch_row)(MYSQL_RES *);
    unsigned long *(*fetch_lengths)(MYSQL_RES *);
    void (*free_result)(MYSQL_RES *);
    int (*next_result)(MYSQL *);         /* 0: another result, -1: none, > 0: an error */
    char (*more_results)(MYSQL *);
    unsigned int (*errno_of)(MYSQL *);
    const char *(*error)(MYSQL *);
    const char *(*sqlstate)(MYSQL *);
    unsigned int (*field_count)(MYSQL *);
    unsigned int (*num_fields)(MYSQL_RES *);
    MysqlField *(*fetch_fields)(MYSQL_RES *);
    unsigned long (*real_escape_string)(MYSQL *, char *, const char *, unsigned long);
} MariadbLibrary;

typedef struct {           /* an engine statement cut at its placeholders */
    char *sql;
    Py_ssize_t length;
    Py_ssize_t *cuts;      /* each placeholder's offset in sql */
    int *takes;            /* the logical statement's parameter each placeholder takes */
    int placeholders, returns;
} Cut;

typedef struct {           /* a prepared logical statement: a text's one Cut, or a Split's */
    Cut *parts;
    int count;
    int exact;             /* a text takes exactly this many parameters, in order; -1: a Split's parts say */
} Prepared;

typedef struct {           /* an engine statement of the batch */
    int logical, returns, first;  /* first: its logical statement's first part */
} Sent;

typedef struct { int type; unsigned int charsetnr; } Column;

typedef struct {           /* a logical statement's rows (its returning parts', in order), copied out */
    Py_ssize_t first;      /* its first cell */
    int rows, columns;
    Column column[MAX_COLUMNS];
} Gathered;

typedef struct {
    Py_ssize_t at, length; /* a value's text in the arena; length -1: NULL */
} Value;

typedef struct {
    MariadbLibrary lib;
    MYSQL *conn;
    PyObject *load;        /* load(field type, bytes): a value of another type, as MySQLdb converts it */
    Prepared statements[STATEMENTS];
    Arena body;            /* a growing text (no terminators): the queued statements, ';' between them */
    Arena query;           /* what goes: BEGIN, the body, COMMIT */
    Sent *sent;            /* a batch has more engine statements than MAX_QUEUED logical ones: grown */
    Py_ssize_t sent_count, sent_capacity;
    Gathered gathered[MAX_QUEUED];
    int count;
    Value *values;
    Py_ssize_t value_count, value_capacity;
    Arena arena;
} Mariadb;

static int buffer_add(Arena *buffer, const char *text, Py_ssize_t length) {
    if (grow(&buffer->data, &buffer->capacity, buffer->size + length, 1) < 0) return -1;
    memcpy(buffer->data + buffer->size, text, (size_t)length);
    buffer->size += length;
    return 0;
}

static int mariadb_init(void *state, uintptr_t handle, void **functions, PyObject *load) {
    Mariadb *m = state;
    if (!PyCallable_Check(load)) {
        PyErr_SetString(PyExc_TypeError, "a libmariadb connection's profiles need a loader of values");
        return -1;
    }
    memcpy(&m->lib, functions, sizeof m->lib);
    m->conn = (MYSQL *)handle;
    m->load = Py_NewRef(load);
    return 0;
}

/* The exception of what failed on the connection: (error number, SQLSTATE, message), as MySQLdb reads them. */
static int mariadb_failed(Mariadb *m) {
    const char *state = m->lib.sqlstate(m->conn), *message = m->lib.error(m->conn);
    PyObject *args = Py_BuildValue("(Iyy)", m->lib.errno_of(m->conn), state ? state : "", message ? message : "");
    if (args != NULL) {
        PyErr_SetObject(Error, args);
        Py_DECREF(args);
    }
    return -1;
}

/* -- statements cut at their placeholders -- */

static void uncut(Prepared *prepared) {
    for (int n = 0; n < prepared->count; n++) {
        PyMem_Free(prepared->parts[n].sql);
        PyMem_Free(prepared->parts[n].cuts);
        PyMem_Free(prepared->parts[n].takes);
    }
    PyMem_Free(prepared->parts);
    memset(prepared, 0, sizeof *prepared);
}

/* ``part`` cut at its ?s, as MariaDBSession._split cuts a statement; ``takes`` NULL: its parameters in order. */
static int cut(Cut *part, const SplitPart *given) {
    int placeholders = 0;
    for (Py_ssize_t n = 0; n < given->length; n++) placeholders += given->sql[n] == '?';
    if (given->takes != NULL && placeholders != given->take_count) {
        PyErr_Format(PyExc_ValueError, "a statement with %d placeholders takes %d parameters", placeholders,
                     given->take_count);
        return -1;
    }
    part->sql = PyMem_Malloc((size_t)given->length + 1);
    part->cuts = PyMem_Malloc(((size_t)placeholders + 1) * sizeof(Py_ssize_t));
    part->takes = PyMem_Malloc(((size_t)placeholders + 1) * sizeof(int));
    if (part->sql == NULL || part->cuts == NULL || part->takes == NULL) return PyErr_NoMemory(), -1;
    memcpy(part->sql, given->sql, (size_t)given->length);
    part->length = given->length;
    part->placeholders = placeholders;
    part->returns = given->returns;
    for (Py_ssize_t n = 0, found = 0; n < given->length; n++)
        if (given->sql[n] == '?') {
            part->takes[found] = given->takes != NULL ? given->takes[found] : (int)found;
            part->cuts[found++] = n;
        }
    return 0;
}

static int mariadb_prepare_split(void *state, int slot, const SplitPart *parts, int count) {
    Prepared *prepared = &((Mariadb *)state)->statements[slot];
    uncut(prepared);
    prepared->parts = PyMem_Calloc((size_t)count, sizeof(Cut));
    if (prepared->parts == NULL) return PyErr_NoMemory(), -1;
    prepared->count = count;  /* the parts cut so far are freed by uncut */
    prepared->exact = -1;
    for (int n = 0; n < count; n++)
        if (cut(&prepared->parts[n], &parts[n]) < 0) return uncut(prepared), -1;
    return 0;
}

/* A text: one part, taking the statement's parameters in order, its rows the statement's. */
static int mariadb_prepare(void *state, int slot, const char *sql, Py_ssize_t length) {
    SplitPart whole = {sql, length, NULL, 0, 1};
    if (mariadb_prepare_split(state, slot, &whole, 1) < 0) return -1;
    ((Mariadb *)state)->statements[slot].exact = ((Mariadb *)state)->statements[slot].parts[0].placeholders;
    return 0;
}

/* -- a batch: one query -- */

/* A parameter as the SQL literal MySQLdb writes for it: an integer's digits, money as a decimal ("17.05", as it
 * writes a Decimal), a text quoted and escaped by libmariadb for the connection's character set, NULL. */
static int mariadb_literal(Mariadb *m, const Param *param) {
    Arena *body = &m->body;
    char text[32];
    if (param->kind == PARAM_INT) return buffer_add(body, text, int_text(param->value, text));
    if (param->kind == PARAM_MONEY) return buffer_add(body, text, money_text(param->value, text));
    if (param->text == NULL) return buffer_add(body, "NULL", 4);
    Py_ssize_t length = (Py_ssize_t)strlen(param->text);
    if (grow(&body->data, &body->capacity, body->size + 2 * length + 3, 1) < 0) return -1;
    body->data[body->size++] = '\'';
    unsigned long written = m->lib.real_escape_string(m->conn, body->data + body->size, param->text,
                                                      (unsigned long)length);
    if (written == (unsigned long)-1) {
        PyErr_SetString(PyExc_ValueError, "a text the connection's character set cannot escape");
        return -1;
    }
    body->size += (Py_ssize_t)written;
    body->data[body->size++] = '\'';
    return 0;
}

static int queue_part(Mariadb *m, const Cut *part, const Param *params, int count, int first) {
    for (int n = 0; n < part->placeholders; n++)
        if (part->takes[n] >= count) {
            PyErr_Format(PyExc_ValueError, "a part takes parameter %d of %d", part->takes[n], count);
            return -1;
        }
    if (grow(&m->sent, &m->sent_capacity, m->sent_count + 1, sizeof(Sent)) < 0 ||
        (m->body.size && buffer_add(&m->body, ";", 1) < 0))
        return -1;
    Py_ssize_t from = 0;
    for (int n = 0; n < part->placeholders; n++) {
        if (buffer_add(&m->body, part->sql + from, part->cuts[n] - from) < 0 ||
            mariadb_literal(m, &params[part->takes[n]]) < 0)
            return -1;
        from = part->cuts[n] + 1;
    }
    if (buffer_add(&m->body, part->sql + from, part->length - from) < 0) return -1;
    m->sent[m->sent_count++] = (Sent){m->count, part->returns, first};
    return 0;
}

static int mariadb_queue(void *state, int slot, const Param *params, int count) {
    Mariadb *m = state;
    const Prepared *prepared = &m->statements[slot];
    if (prepared->exact >= 0 && prepared->exact != count) {
        PyErr_Format(PyExc_ValueError, "the statement takes %d parameters, not %d", prepared->exact, count);
        return -1;
    }
    for (int n = 0; n < prepared->count; n++)
        if (queue_part(m, &prepared->parts[n], params, count, n == 0) < 0) return -1;
    memset(&m->gathered[m->count++], 0, sizeof(Gathered));
    return 0;
}

/* The query: BEGIN (one statement, or two: SET TRANSACTION;START TRANSACTION), the body, COMMIT. */
static int assemble(Mariadb *m, PyObject *begin, int commit) {
    Arena *query = &m->query;
    query->size = 0;
    if (begin != NULL && buffer_add(query, PyBytes_AS_STRING(begin), PyBytes_GET_SIZE(begin)) < 0) return -1;
    if (m->body.size && ((query->size && buffer_add(query, ";", 1) < 0) ||
                         buffer_add(query, m->body.data, m->body.size) < 0))
        return -1;
    if (commit && ((query->size && buffer_add(query, ";", 1) < 0) || buffer_add(query, "COMMIT", 6) < 0)) return -1;
    return 0;
}

static int statements_in(PyObject *begin) {
    int count = 1;
    for (Py_ssize_t n = 0; n < PyBytes_GET_SIZE(begin); n++) count += PyBytes_AS_STRING(begin)[n] == ';';
    return count;
}

/* The rows of engine statement ``k`` copied out: a result is freed at once, as MySQLdb frees its own, so that
 * nothing of the connection's is held between two batches (it may be closed, and freed, meanwhile). */
static int keep(Mariadb *m, Py_ssize_t k, MYSQL_RES *result) {
    const Sent *sent = &m->sent[k];
    Gathered *gathered = &m->gathered[sent->logical];
    if (sent->first) gathered->first = m->value_count;
    if (!sent->returns || result == NULL) return 0;
    int columns = (int)m->lib.num_fields(result);
    if (columns > MAX_COLUMNS || (gathered->rows && columns != gathered->columns)) {
        PyErr_Format(PyExc_ValueError, "a statement's parts return %d columns (at most %d, the same in each)",
                     columns, MAX_COLUMNS);
        return -1;
    }
    const MysqlField *fields = m->lib.fetch_fields(result);
    gathered->columns = columns;
    for (int n = 0; n < columns; n++) gathered->column[n] = (Column){fields[n].type, fields[n].charsetnr};
    char **row;
    while ((row = m->lib.fetch_row(result)) != NULL) {
        const unsigned long *lengths = m->lib.fetch_lengths(result);
        if (grow(&m->values, &m->value_capacity, m->value_count + columns, sizeof(Value)) < 0) return -1;
        for (int n = 0; n < columns; n++) {
            Value *value = &m->values[m->value_count++];
            value->length = row[n] == NULL ? -1 : (Py_ssize_t)lengths[n];
            value->at = row[n] == NULL ? 0 : arena_add(&m->arena, row[n], value->length);
            if (value->at < 0) return -1;
        }
        gathered->rows++;
    }
    return 0;
}

/* After a failure every result left is read, so that the connection takes the session's ROLLBACK (the server runs
 * nothing of a multi-statement query after its error, but a failure of ours may leave results). The error raised
 * stays the failure's. */
static void drain(Mariadb *m) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    for (Py_ssize_t n = 0; n < m->sent_count + 8 && m->lib.more_results(m->conn); n++) {
        int more;
        Py_BEGIN_ALLOW_THREADS
        more = m->lib.next_result(m->conn);
        Py_END_ALLOW_THREADS
        if (more != 0) break;
        MYSQL_RES *left = m->lib.store_result(m->conn);
        if (left != NULL) m->lib.free_result(left);
    }
    PyErr_Restore(type, value, traceback);
}

/* One result after another, as MariaDBSession._results reads them: -1 on the first failure, raised. */
static int read_results(Mariadb *m, int skipped, Py_ssize_t *got) {
    for (;;) {
        MYSQL_RES *result;
        int more;
        Py_BEGIN_ALLOW_THREADS
        result = m->lib.store_result(m->conn);
        Py_END_ALLOW_THREADS
        if (result == NULL && m->lib.field_count(m->conn) != 0) return mariadb_failed(m);
        Py_ssize_t k = (*got)++ - skipped;
        int kept = k >= 0 && k < m->sent_count ? keep(m, k, result) : 0;
        if (result != NULL) m->lib.free_result(result);
        if (kept < 0) return -1;
        Py_BEGIN_ALLOW_THREADS
        more = m->lib.next_result(m->conn);
        Py_END_ALLOW_THREADS
        if (more > 0) return mariadb_failed(m);
        if (more < 0) return 0;
    }
}

static int mariadb_send(void *state, PyObject *begin, int commit) {
    Mariadb *m = state;
    if (begin == NULL && m->sent_count == 0 && !commit) return 0;
    int skipped = begin == NULL ? 0 : statements_in(begin), failed;
    if (assemble(m, begin, commit) < 0) return -1;
    Py_BEGIN_ALLOW_THREADS  /* the server's answer waited for, as MySQLdb waits: a KILL from elsewhere gets through */
    failed = m->lib.send_query(m->conn, m->query.data, (unsigned long)m->query.size) ||
             m->lib.read_query_result(m->conn);
    Py_END_ALLOW_THREADS
    Py_ssize_t got = 0, expected = skipped + m->sent_count + commit;
    if (failed ? mariadb_failed(m) : read_results(m, skipped, &got) < 0) {
        drain(m);
        return -1;
    }
    if (got != expected) {  /* a statement's text held a ';' of its own: its rows cannot be told apart */
        PyErr_Format(PyExc_RuntimeError, "%zd results for %zd statements", got, expected);
        return -1;
    }
    return 0;
}

static void mariadb_clear(void *state) {
    Mariadb *m = state;
    m->body.size = m->sent_count = m->value_count = 0;
    m->count = 0;
    m->arena.size = 0;
}

/* -- the results -- */

static const Value *value_at(Mariadb *m, int k, int row, int column) {
    return &m->values[m->gathered[k].first + (Py_ssize_t)row * m->gathered[k].columns + column];
}

static int mariadb_rows(void *state, int k) {
    return ((Mariadb *)state)->gathered[k].rows;
}

static int mariadb_columns(void *state, int k) {
    return ((Mariadb *)state)->gathered[k].columns;
}

static int mariadb_is_null(void *state, int k, int row, int column) {
    return value_at(state, k, row, column)->length < 0;
}

static const char *mariadb_text(void *state, int k, int row, int column, int *length) {
    Mariadb *m = state;
    const Value *value = value_at(m, k, row, column);
    *length = value->length < 0 ? 0 : (int)value->length;
    return value->length < 0 ? "" : m->arena.data + value->at;
}

static long long mariadb_integer(void *state, int k, int row, int column) {
    int length;
    return strtoll(mariadb_text(state, k, row, column, &length), NULL, 10);
}

static long long mariadb_cents(void *state, int k, int row, int column) {
    int length;
    return text_cents(mariadb_text(state, k, row, column, &length));
}

/* A column as MySQLdb converts it on a UTF-8 connection (native.py takes no other): integers and strings here (a
 * string of the binary character set as bytes), the other types (DECIMAL, DATETIME) by MySQLdb's own converters
 * (``load``). */
static PyObject *mariadb_value(void *state, int k, int row, int column) {
    Mariadb *m = state;
    const Value *value = value_at(m, k, row, column);
    if (value->length < 0) Py_RETURN_NONE;
    const char *text = m->arena.data + value->at;
    const Column *kind = &m->gathered[k].column[column];
    switch (kind->type) {
    case FIELD_TINY: case FIELD_SHORT: case FIELD_LONG: case FIELD_LONGLONG: case FIELD_INT24: case FIELD_YEAR:
        return PyLong_FromString(text, NULL, 10);
    case FIELD_VARCHAR: case FIELD_TINY_BLOB: case FIELD_MEDIUM_BLOB: case FIELD_LONG_BLOB: case FIELD_BLOB:
    case FIELD_VAR_STRING: case FIELD_STRING:
        return kind->charsetnr == BINARY_CHARSET ? PyBytes_FromStringAndSize(text, value->length)
                                                 : PyUnicode_DecodeUTF8(text, value->length, NULL);
    default:
        return PyObject_CallFunction(m->load, "iy#", kind->type, text, value->length);
    }
}

/* Nothing of the connection's is held (``keep``): it may be closed and freed before this object goes. */
static void mariadb_release(void *state) {
    Mariadb *m = state;
    for (int n = 0; n < STATEMENTS; n++) uncut(&m->statements[n]);
    PyMem_Free(m->body.data);
    PyMem_Free(m->query.data);
    PyMem_Free(m->sent);
    PyMem_Free(m->values);
    PyMem_Free(m->arena.data);
    Py_XDECREF(m->load);
}

static const Backend MARIADB_BACKEND = {
    "libmariadb", sizeof(MariadbLibrary) / sizeof(void (*)(void)), sizeof(Mariadb), mariadb_init, mariadb_prepare,
    mariadb_queue, mariadb_send, mariadb_clear, mariadb_rows, mariadb_columns, mariadb_is_null, mariadb_integer,
    mariadb_cents, mariadb_text, mariadb_value, mariadb_release, mariadb_prepare_split,
};
