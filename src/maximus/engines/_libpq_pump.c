/* The libpq pump: the pump's machine (_pump_core.h) over the libpq psycopg loaded, whose function addresses
 * Python passes in (engines/postgres/pump.py), calling prepared statements with text parameters; and those
 * parameters' text form. */

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

enum { PGRES_COMMAND_OK = 1, PGRES_TUPLES_OK = 2 };       /* ExecStatusType */
enum { DIAG_SQLSTATE = 'C' };                            /* PG_DIAG_SQLSTATE */
#define MAX_PARAMS 64

typedef struct {
    int (*send_query_prepared)(PGconn *, const char *, int, const char *const *, const int *, const int *, int);
    int (*consume_input)(PGconn *);
    int (*is_busy)(PGconn *);
    PGresult *(*get_result)(PGconn *);
    int (*result_status)(const PGresult *);
    char *(*result_error_field)(const PGresult *, int);
    char *(*result_error_message)(const PGresult *);
    void (*clear)(PGresult *);
    char *(*error_message)(const PGconn *);
    int (*socket)(const PGconn *);
    int (*flush)(PGconn *);
    int (*ntuples)(const PGresult *);
    int (*get_is_null)(const PGresult *, int, int);
    char *(*get_value)(const PGresult *, int, int);
    int (*get_length)(const PGresult *, int, int);
} Driver;

#define DRIVER_FUNCTIONS 15
#define DRIVER_LIBRARY "libpq"
#define DRIVER_TYPE_NAME "maximus.engines._libpq_pump.Pump"
#include "_pump_core.h"

/* -- the driver -- */

static int driver_socket(Pump *pump, Slot *slot) {
    return pump->lib.socket(slot->conn);
}

static PyObject *driver_connection_error(Pump *pump, Slot *slot) {
    return Py_BuildValue("(Oy)", Py_None, pump->lib.error_message(slot->conn));
}

static PyObject *result_error(Pump *pump, PGresult *result) {
    const char *state = pump->lib.result_error_field(result, DIAG_SQLSTATE);
    const char *message = pump->lib.result_error_message(result);
    if (state == NULL) return Py_BuildValue("(Oy)", Py_None, message ? message : "");
    return Py_BuildValue("(yy)", state, message ? message : "");
}

/* Send what is still in libpq's output buffer: psycopg's connections are nonblocking, so a send may
 * leave part of a call there when the socket's buffer is full. 0, or -1 if the connection failed. */
static int flush_all(Pump *pump, Slot *slot) {
    int state;
    while ((state = pump->lib.flush(slot->conn)) == 1) {
        struct pollfd writable = {.fd = pump->lib.socket(slot->conn), .events = POLLOUT};
        Py_BEGIN_ALLOW_THREADS
        poll(&writable, 1, -1);
        Py_END_ALLOW_THREADS
    }
    return state;
}

/* The form is the prepared statement's name; the parameters are bytes (text form) or None. */
static int driver_send(Pump *pump, Slot *slot, PyObject *form, PyObject *params) {
    if (!PyBytes_Check(form)) {
        PyErr_SetString(PyExc_TypeError, "a prepared statement's name must be bytes");
        return -1;
    }
    Py_ssize_t count = PySequence_Fast_GET_SIZE(params);
    if (count > MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "too many parameters for one call");
        return -1;
    }
    const char *values[MAX_PARAMS];
    for (Py_ssize_t n = 0; n < count; n++) {
        PyObject *value = PySequence_Fast_GET_ITEM(params, n);
        if (value == Py_None) {
            values[n] = NULL;
        } else if (PyBytes_Check(value)) {
            values[n] = PyBytes_AS_STRING(value);
        } else {
            PyErr_SetString(PyExc_TypeError, "a call's parameters must be bytes (text form) or None");
            return -1;
        }
    }
    /* libpq copies the values into its output buffer */
    int sent = pump->lib.send_query_prepared(slot->conn, PyBytes_AS_STRING(form), (int)count, values, NULL, NULL, 0);
    return sent && flush_all(pump, slot) == 0 ? 1 : 0;
}

static int driver_drain(Pump *pump, Slot *slot) {
    if (!pump->lib.consume_input(slot->conn)) return -1;
    while (!pump->lib.is_busy(slot->conn)) {
        PGresult *result = pump->lib.get_result(slot->conn);
        if (result == NULL) return 1;  /* libpq ends every query's results with a NULL */
        if (slot->pending == NULL) slot->pending = result;
        else pump->lib.clear(result);
    }
    return 0;
}

/* The first value of a result, as the session's call() returns it: bytes, or None. */
static PyObject *first_value(Pump *pump, PGresult *result) {
    if (pump->lib.ntuples(result) < 1 || pump->lib.get_is_null(result, 0, 0)) Py_RETURN_NONE;
    return PyBytes_FromStringAndSize(pump->lib.get_value(result, 0, 0), pump->lib.get_length(result, 0, 0));
}

static int driver_finish(Pump *pump, Slot *slot, int state, int keep, PyObject **out) {
    PGresult *result = slot->pending;
    slot->pending = NULL;
    int status = result ? pump->lib.result_status(result) : -1;
    int outcome = 0;
    if (state == 1 && (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)) {
        if (keep && (*out = first_value(pump, result)) == NULL) outcome = -1;
    } else {
        *out = (state < 0 || result == NULL) ? driver_connection_error(pump, slot) : result_error(pump, result);
        outcome = *out == NULL ? -1 : 1;
    }
    if (result) pump->lib.clear(result);
    return outcome;
}

static void driver_release(Pump *pump, Slot *slot) {
    pump->lib.clear(slot->pending);
    slot->pending = NULL;
}

/* -- parameters in PostgreSQL's text input form: postgres.py's _text_parameters, which is the reference -- */

/* str(value), as UTF-8; an int (not a bool) written out directly, as str() writes it. */
static int text_add_str(Text *text, PyObject *value) {
    if (PyLong_CheckExact(value)) {
        int written = text_add_int(text, value);
        if (written != 0) return written < 0 ? -1 : 0;
    }
    PyObject *str = PyObject_Str(value);
    if (str == NULL) return -1;
    Py_ssize_t size;
    const char *utf8 = PyUnicode_AsUTF8AndSize(str, &size);
    int failed = utf8 == NULL ? -1 : text_add(text, utf8, size);
    Py_DECREF(str);
    return failed;
}

/* An array literal, "{1,2,3}", from a list or tuple: each element as str() writes it. */
static int text_add_array(Text *text, PyObject *values) {
    if (text_add(text, "{", 1) < 0) return -1;
    /* The size is read again each time, and the element held: str() of an element may run Python code. */
    for (Py_ssize_t n = 0; n < PySequence_Fast_GET_SIZE(values); n++) {
        PyObject *item = PySequence_Fast_GET_ITEM(values, n);
        Py_INCREF(item);
        int failed = (n > 0 && text_add(text, ",", 1) < 0) || text_add_str(text, item) < 0;
        Py_DECREF(item);
        if (failed) return -1;
    }
    return text_add(text, "}", 1);
}

static PyObject *text_parameter(PyObject *value) {
    if (value == Py_None) Py_RETURN_NONE;
    Text text = TEXT_INIT(text);
    int failed = PyTuple_CheckExact(value) || PyList_CheckExact(value) ? text_add_array(&text, value)
                                                                         : text_add_str(&text, value);
    PyObject *bytes = failed ? NULL : PyBytes_FromStringAndSize(text.data, text.size);
    text_free(&text);
    return bytes;
}

static PyObject *text_parameters(PyObject *self, PyObject *params) {
    (void)self;
    /* A tuple holds every parameter while str() runs, whatever it does to a list it was given (a tuple
     * is returned as it is, so the calls' own parameters cost nothing here). */
    PyObject *sequence = PySequence_Tuple(params);
    if (sequence == NULL) return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(sequence);
    PyObject *texts = PyList_New(count);
    for (Py_ssize_t n = 0; texts != NULL && n < count; n++) {
        PyObject *text = text_parameter(PyTuple_GET_ITEM(sequence, n));
        if (text == NULL) Py_CLEAR(texts);
        else PyList_SET_ITEM(texts, n, text);
    }
    Py_DECREF(sequence);
    return texts;
}

static PyMethodDef module_methods[] = {
    {"text_parameters", text_parameters, METH_O,
     "text_parameters(params) -> list of bytes or None: each parameter in PostgreSQL's text input form"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_libpq_pump", "Calls in flight on several libpq connections.", -1, module_methods,
};

PyMODINIT_FUNC PyInit__libpq_pump(void) {
    return module_with_pump(&module);
}
