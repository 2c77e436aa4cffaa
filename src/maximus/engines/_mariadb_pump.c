/* The MariaDB pump: the pump's machine (_pump_core.h) over the libmariadb mysqlclient (MySQLdb) loaded, whose
 * function addresses Python passes in (engines/mariadb/pump.py); and a call's parameters as SQL literals.
 *
 * A call is its statement's pieces (the SQL split at its placeholders) with the call's literals between them,
 * sent as one text query. Once the socket is readable the result is read whole: the server sends a call's one
 * row at once, so the rest of it, if any, is on its way (as MariaDBSession.call_finished does).
 */

typedef struct st_mysql MYSQL;
typedef struct st_mysql_res MYSQL_RES;

typedef struct {
    int (*send_query)(MYSQL *, const char *, unsigned long);
    char (*read_query_result)(MYSQL *);  /* my_bool: nonzero on error */
    MYSQL_RES *(*store_result)(MYSQL *);
    char **(*fetch_row)(MYSQL_RES *);
    unsigned long *(*fetch_lengths)(MYSQL_RES *);
    void (*free_result)(MYSQL_RES *);
    int (*next_result)(MYSQL *);  /* 0: another result, -1: none, > 0: an error */
    unsigned int (*errno_of)(MYSQL *);
    const char *(*error)(MYSQL *);
    const char *(*sqlstate)(MYSQL *);
    int (*get_socket)(MYSQL *);
    unsigned int (*field_count)(MYSQL *);
} Driver;

#define DRIVER_FUNCTIONS 12
#define DRIVER_LIBRARY "libmariadb"
#define DRIVER_TYPE_NAME "maximus.engines._mariadb_pump.Pump"
#include "_pump_core.h"

/* -- the driver -- */

static int driver_socket(Pump *pump, Slot *slot) {
    return pump->lib.get_socket(slot->conn);
}

/* (error number, SQLSTATE, message): engines/mariadb/pump.py makes the exception MySQLdb raises of it. */
static PyObject *driver_connection_error(Pump *pump, Slot *slot) {
    const char *state = pump->lib.sqlstate(slot->conn), *message = pump->lib.error(slot->conn);
    return Py_BuildValue("(Iyy)", pump->lib.errno_of(slot->conn), state ? state : "", message ? message : "");
}

/* The form is the statement's pieces, bytes; the parameters are SQL literals, bytes, one between two pieces. */
static int driver_send(Pump *pump, Slot *slot, PyObject *form, PyObject *params) {
    if (!PyTuple_Check(form) || PyTuple_GET_SIZE(form) < 1) {
        PyErr_SetString(PyExc_TypeError, "a statement's form must be a tuple of its pieces");
        return -1;
    }
    Py_ssize_t literals = PyTuple_GET_SIZE(form) - 1;
    if (PySequence_Fast_GET_SIZE(params) != literals) {
        PyErr_Format(PyExc_ValueError, "the statement takes %zd parameters, the call has %zd", literals,
                     PySequence_Fast_GET_SIZE(params));
        return -1;
    }
    Text query = TEXT_INIT(query);
    for (Py_ssize_t n = 0; n <= literals; n++) {
        PyObject *piece = PyTuple_GET_ITEM(form, n);
        PyObject *literal = n < literals ? PySequence_Fast_GET_ITEM(params, n) : NULL;
        if (!PyBytes_Check(piece) || (literal != NULL && !PyBytes_Check(literal))) {
            PyErr_SetString(PyExc_TypeError, "a call's parameters must be SQL literals (bytes)");
            text_free(&query);
            return -1;
        }
        if (text_add(&query, PyBytes_AS_STRING(piece), PyBytes_GET_SIZE(piece)) < 0 ||
            (literal != NULL && text_add(&query, PyBytes_AS_STRING(literal), PyBytes_GET_SIZE(literal)) < 0)) {
            text_free(&query);
            return -1;
        }
    }
    int failed = pump->lib.send_query(slot->conn, query.data, (unsigned long)query.size);
    text_free(&query);
    return failed ? 0 : 1;
}

static int driver_drain(Pump *pump, Slot *slot) {
    (void)pump;
    (void)slot;
    return 1;  /* readable: driver_finish reads the result whole */
}

/* The first value of a result, as the session's call_value() holds it, but as the server sent it: bytes, or
 * None. */
static PyObject *first_value(Pump *pump, MYSQL_RES *result) {
    char **row = result ? pump->lib.fetch_row(result) : NULL;
    if (row == NULL || row[0] == NULL) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(row[0], (Py_ssize_t)pump->lib.fetch_lengths(result)[0]);
}

static int failure(Pump *pump, Slot *slot, PyObject *value, PyObject **out) {
    Py_XDECREF(value);
    *out = driver_connection_error(pump, slot);
    return *out == NULL ? -1 : 1;
}

static int driver_finish(Pump *pump, Slot *slot, int state, int keep, PyObject **out) {
    (void)state;
    MYSQL *mysql = slot->conn;
    PyObject *value = NULL;
    char failed;
    Py_BEGIN_ALLOW_THREADS  /* the rest of the result may still be on its way: wait as mysqlclient does */
    failed = pump->lib.read_query_result(mysql);
    Py_END_ALLOW_THREADS
    if (failed) return failure(pump, slot, NULL, out);
    for (int first = 1;; first = 0) {
        MYSQL_RES *result = pump->lib.store_result(mysql);
        if (result == NULL && pump->lib.field_count(mysql) != 0) return failure(pump, slot, value, out);
        if (first && keep) value = first_value(pump, result);
        if (result) pump->lib.free_result(result);
        if (first && keep && value == NULL) return -1;
        int more = pump->lib.next_result(mysql);
        if (more > 0) return failure(pump, slot, value, out);
        if (more < 0) break;
    }
    *out = value;
    return 0;
}

static void driver_release(Pump *pump, Slot *slot) {
    (void)pump;
    slot->pending = NULL;  /* nothing is held between a send and its result */
}

/* -- a call's parameters as SQL literals: literals.py's sql_literal, which is the reference -- */

/* A string literal as mysql_escape_string writes it for UTF-8 text, quotes included. */
static int literal_add_text(Text *text, const char *utf8, Py_ssize_t size) {
    if (text_add(text, "'", 1) < 0) return -1;
    Py_ssize_t from = 0;
    for (Py_ssize_t n = 0; n < size; n++) {
        const char *escaped;
        switch (utf8[n]) {
            case '\0': escaped = "\\0"; break;
            case '\n': escaped = "\\n"; break;
            case '\r': escaped = "\\r"; break;
            case '\\': escaped = "\\\\"; break;
            case '\'': escaped = "\\'"; break;
            case '"': escaped = "\\\""; break;
            case '\032': escaped = "\\Z"; break;
            default: continue;
        }
        if (text_add(text, utf8 + from, n - from) < 0 || text_add(text, escaped, 2) < 0) return -1;
        from = n + 1;
    }
    if (text_add(text, utf8 + from, size - from) < 0) return -1;
    return text_add(text, "'", 1);
}

/* A list or tuple of ints as its JSON text, quoted: 1, or 0 (nothing written) when an element is not an int
 * that fits in a long long, -1 on error. */
static int literal_add_int_array(Text *text, PyObject *values) {
    Py_ssize_t mark = text->size;
    if (text_add(text, "'[", 2) < 0) return -1;
    Py_ssize_t count = PySequence_Fast_GET_SIZE(values);
    for (Py_ssize_t n = 0; n < count; n++) {
        PyObject *item = PySequence_Fast_GET_ITEM(values, n);
        int written = PyLong_CheckExact(item) ? (n > 0 && text_add(text, ",", 1) < 0 ? -1 : text_add_int(text, item))
                                              : 0;
        if (written <= 0) {
            text->size = mark;
            return written;
        }
    }
    return text_add(text, "]'", 2) < 0 ? -1 : 1;
}

static PyObject *sql_literal_of(PyObject *value, PyObject *other) {
    Text text = TEXT_INIT(text);
    int written = 0;
    if (value == Py_None) {
        written = text_add(&text, "NULL", 4) < 0 ? -1 : 1;
    } else if (PyLong_CheckExact(value)) {
        written = text_add_int(&text, value);
    } else if (PyUnicode_CheckExact(value)) {
        Py_ssize_t size;
        const char *utf8 = PyUnicode_AsUTF8AndSize(value, &size);
        written = utf8 == NULL || literal_add_text(&text, utf8, size) < 0 ? -1 : 1;
    } else if (PyList_CheckExact(value) || PyTuple_CheckExact(value)) {
        written = literal_add_int_array(&text, value);
    }
    PyObject *literal = written < 0 ? NULL
                        : written > 0 ? PyBytes_FromStringAndSize(text.data, text.size)
                        : PyObject_CallOneArg(other, value);  /* every other value: as the reference writes it */
    text_free(&text);
    if (literal != NULL && !PyBytes_Check(literal)) {
        PyErr_SetString(PyExc_TypeError, "an SQL literal must be bytes");
        Py_CLEAR(literal);
    }
    return literal;
}

static PyObject *sql_literals(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    (void)self;
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "sql_literals(other, params)");
        return NULL;
    }
    /* A tuple holds every parameter while `other` runs, whatever it does to a list it was given. */
    PyObject *sequence = PySequence_Tuple(args[1]);
    if (sequence == NULL) return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(sequence);
    PyObject *literals = PyTuple_New(count);
    for (Py_ssize_t n = 0; literals != NULL && n < count; n++) {
        PyObject *literal = sql_literal_of(PyTuple_GET_ITEM(sequence, n), args[0]);
        if (literal == NULL) Py_CLEAR(literals);
        else PyTuple_SET_ITEM(literals, n, literal);
    }
    Py_DECREF(sequence);
    return literals;
}

static PyMethodDef module_methods[] = {
    {"sql_literals", (PyCFunction)(void (*)(void))sql_literals, METH_FASTCALL,
     "sql_literals(other, params) -> tuple of bytes: each parameter as an SQL literal; other(value) writes those "
     "this function does not (anything but None, an int, a str, a list or tuple of ints)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_mariadb_pump", "Calls in flight on several libmariadb connections.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__mariadb_pump(void) {
    return module_with_pump(&module);
}
