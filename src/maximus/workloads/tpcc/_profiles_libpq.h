/* The profiles' statement backend on a libpq connection (_profiles.h): the queued statements, each prepared once
 * (named maximus_c<profiles>_<slot>, apart from the session's own), go in one pipeline with their parameters as
 * text, after the transaction's BEGIN and before its COMMIT when the session left them to it, as
 * PostgresSession._pipelined sends a batch: one round trip. The connection is psycopg's (its PGconn *), the
 * functions those of the libpq psycopg loaded, in the order of PqLibrary (native.py's list). */
#include <poll.h>

#include "_profiles.h"

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;
typedef unsigned int Oid;

enum { PGRES_COMMAND_OK = 1, PGRES_TUPLES_OK = 2, PGRES_PIPELINE_SYNC = 10 };  /* ExecStatusType */
enum { PG_DIAG_SQLSTATE = 'C' };
enum { INT8OID = 20, INT2OID = 21, INT4OID = 23, TEXTOID = 25, OIDOID = 26, FLOAT4OID = 700, FLOAT8OID = 701,
       BPCHAROID = 1042, VARCHAROID = 1043, NAMEOID = 19 };
#define MAX_PARAMS 256   /* a batch's parameters: a New-Order's second has about 250 */

typedef struct {
    PGresult *(*prepare)(PGconn *, const char *, const char *, int, const Oid *);
    int (*send_query_prepared)(PGconn *, const char *, int, const char *const *, const int *, const int *, int);
    int (*send_query_params)(PGconn *, const char *, int, const Oid *, const char *const *, const int *,
                             const int *, int);
    int (*enter_pipeline_mode)(PGconn *);
    int (*exit_pipeline_mode)(PGconn *);
    int (*pipeline_sync)(PGconn *);
    int (*flush)(PGconn *);
    int (*is_busy)(PGconn *);
    int (*consume_input)(PGconn *);
    PGresult *(*get_result)(PGconn *);
    int (*result_status)(const PGresult *);
    char *(*result_error_field)(const PGresult *, int);
    char *(*result_error_message)(const PGresult *);
    char *(*error_message)(const PGconn *);
    void (*clear)(PGresult *);
    int (*ntuples)(const PGresult *);
    int (*nfields)(const PGresult *);
    int (*get_is_null)(const PGresult *, int, int);
    char *(*get_value)(const PGresult *, int, int);
    int (*get_length)(const PGresult *, int, int);
    Oid (*ftype)(const PGresult *, int);
    int (*socket)(const PGconn *);
} PqLibrary;

typedef struct {
    PqLibrary lib;
    PGconn *conn;
    PyObject *load;          /* load(type oid, bytes): a value of another type, as psycopg reads it */
    long id;                 /* this object's, in its statements' names */
    struct { int slot, first, count; } queued[MAX_QUEUED];
    int count;
    Py_ssize_t params[MAX_PARAMS];  /* the queued parameters' texts in the arena; -1: NULL */
    int param_count;
    Arena arena;
    PGresult *results[MAX_QUEUED];
} Pq;

static long pq_made;  /* Profiles made on libpq connections: each one's statements have their own names */

static int pq_init(void *state, uintptr_t handle, void **functions, PyObject *load) {
    Pq *q = state;
    if (!PyCallable_Check(load)) {
        PyErr_SetString(PyExc_TypeError, "a libpq connection's profiles need a loader of values");
        return -1;
    }
    memcpy(&q->lib, functions, sizeof q->lib);
    q->conn = (PGconn *)handle;
    q->load = Py_NewRef(load);
    q->id = ++pq_made;
    return 0;
}

/* The exception of a failed result: (SQLSTATE, message), or (None, the connection's message) without a result. */
static int pq_failed(Pq *q, const PGresult *result) {
    const char *state = result ? q->lib.result_error_field(result, PG_DIAG_SQLSTATE) : NULL;
    const char *message = result ? q->lib.result_error_message(result) : q->lib.error_message(q->conn);
    PyObject *args = state ? Py_BuildValue("(yy)", state, message ? message : "")
                           : Py_BuildValue("(Oy)", Py_None, message ? message : "");
    if (args != NULL) {
        PyErr_SetObject(Error, args);
        Py_DECREF(args);
    }
    return -1;
}

static int pq_ok(Pq *q, const PGresult *result) {
    int status = q->lib.result_status(result);
    return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
}

static void pq_name(Pq *q, int slot, char name[48]) {
    snprintf(name, 48, "maximus_c%ld_%d", q->id, slot);
}

/* Prepared as PostgresSession._prepare does: each ? becomes $1, $2, ... */
static int pq_prepare(void *state, int slot, const char *sql, Py_ssize_t length) {
    Pq *q = state;
    char *numbered = PyMem_Malloc((size_t)length * 4 + 1), name[48];
    if (numbered == NULL) return PyErr_NoMemory(), -1;
    Py_ssize_t out = 0;
    int placeholder = 0;
    for (Py_ssize_t n = 0; n < length; n++) {
        if (sql[n] == '?') out += sprintf(numbered + out, "$%d", ++placeholder);
        else numbered[out++] = sql[n];
    }
    numbered[out] = '\0';
    pq_name(q, slot, name);
    PGresult *result;
    Py_BEGIN_ALLOW_THREADS  /* a round trip, as psycopg's prepare: a cancel from another thread must get through */
    result = q->lib.prepare(q->conn, name, numbered, 0, NULL);
    Py_END_ALLOW_THREADS
    PyMem_Free(numbered);
    int failed = result == NULL || !pq_ok(q, result) ? pq_failed(q, result) : 0;
    q->lib.clear(result);
    return failed;
}

static int pq_param(Pq *q, const Param *param) {
    char text[32];
    int length = param->kind == PARAM_INT ? int_text(param->value, text)
                 : param->kind == PARAM_MONEY ? money_text(param->value, text) : -1;
    Py_ssize_t at = length >= 0 ? arena_add(&q->arena, text, length)
                                : arena_add(&q->arena, param->text, (Py_ssize_t)strlen(param->text));
    if (at < 0) return -1;
    q->params[q->param_count++] = at;
    return 0;
}

static int pq_queue(void *state, int slot, const Param *params, int count) {
    Pq *q = state;
    if (q->param_count + count > MAX_PARAMS) {
        PyErr_Format(PyExc_ValueError, "more than %d parameters in one batch", MAX_PARAMS);
        return -1;
    }
    q->queued[q->count].slot = slot;
    q->queued[q->count].first = q->param_count;
    q->queued[q->count].count = count;
    for (int n = 0; n < count; n++)
        if (pq_param(q, &params[n]) < 0) return -1;
    q->count++;
    return 0;
}

/* psycopg's connections are nonblocking: what a full socket buffer kept is sent as the socket takes it. */
static int pq_flush(Pq *q) {
    int state;
    while ((state = q->lib.flush(q->conn)) == 1) {
        struct pollfd writable = {.fd = q->lib.socket(q->conn), .events = POLLOUT};
        if (writable.fd < 0) return -1;  /* no connection any more: poll would wait for ever */
        Py_BEGIN_ALLOW_THREADS
        poll(&writable, 1, -1);
        Py_END_ALLOW_THREADS
    }
    return state;
}

/* The pipeline's next result, waited for (NULL: the connection broke, or the end of a statement's results). */
static PGresult *pq_next(Pq *q) {
    while (q->lib.is_busy(q->conn)) {
        struct pollfd readable = {.fd = q->lib.socket(q->conn), .events = POLLIN};
        if (readable.fd < 0) break;
        Py_BEGIN_ALLOW_THREADS
        poll(&readable, 1, -1);
        Py_END_ALLOW_THREADS
        if (!q->lib.consume_input(q->conn)) break;
    }
    return q->lib.get_result(q->conn);
}

static int pq_send_all(Pq *q, PyObject *begin, int commit) {
    if (begin != NULL && !q->lib.send_query_params(q->conn, PyBytes_AS_STRING(begin), 0, NULL, NULL, NULL, NULL, 0))
        return -1;
    const char *values[MAX_PARAMS];
    char name[48];
    for (int k = 0; k < q->count; k++) {
        int first = q->queued[k].first, count = q->queued[k].count;
        for (int n = 0; n < count; n++) values[n] = q->arena.data + q->params[first + n];
        pq_name(q, q->queued[k].slot, name);
        if (!q->lib.send_query_prepared(q->conn, name, count, values, NULL, NULL, 0)) return -1;
    }
    if (commit && !q->lib.send_query_params(q->conn, "COMMIT", 0, NULL, NULL, NULL, NULL, 0)) return -1;
    return q->lib.pipeline_sync(q->conn) && pq_flush(q) == 0 ? 0 : -1;
}

/* Every result of the pipeline read (BEGIN's and COMMIT's dropped); the first that failed raised, as
 * PostgresSession._pipelined raises it (what follows a failure in the pipeline is not run). */
static int pq_read_all(Pq *q, int begin, int commit) {
    int expected = begin + q->count + commit, failed = 0;
    for (int n = 0; n < expected; n++) {
        PGresult *result = pq_next(q);
        if (result == NULL) return failed ? -1 : pq_failed(q, NULL);
        q->lib.clear(pq_next(q));  /* the NULL that ends a statement's results */
        if (!failed && !pq_ok(q, result)) failed = pq_failed(q, result);
        if (n >= begin && n < begin + q->count) q->results[n - begin] = result;
        else q->lib.clear(result);
    }
    PGresult *sync = pq_next(q);
    if (sync == NULL && !failed) return pq_failed(q, NULL);
    q->lib.clear(sync);
    return failed;
}

/* After a failure the pipeline ended, so that the connection takes the session's ROLLBACK: a pipeline whose sending
 * failed is closed with a sync first, then every result left is read (the end of what is pending is two ends of
 * results in a row; a lost connection gives nothing but ends). The error raised stays the failure's. */
static void pq_drain(Pq *q, int unsent) {
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    if (!unsent || (q->lib.pipeline_sync(q->conn) && pq_flush(q) == 0)) {
        int ends = 0;
        for (int n = 0; n < 4 * MAX_QUEUED + 8 && ends < 2; n++) {
            PGresult *left = pq_next(q);
            ends = left == NULL ? ends + 1 : 0;
            q->lib.clear(left);
        }
    }
    q->lib.exit_pipeline_mode(q->conn);
    PyErr_Restore(type, value, traceback);
}

static int pq_send(void *state, PyObject *begin, int commit) {
    Pq *q = state;
    if (begin == NULL && q->count == 0 && !commit) return 0;
    if (!q->lib.enter_pipeline_mode(q->conn)) return pq_failed(q, NULL);
    int unsent = pq_send_all(q, begin, commit) < 0;
    int failed = unsent ? pq_failed(q, NULL) : pq_read_all(q, begin != NULL, commit);
    if (failed) {
        pq_drain(q, unsent);
        return -1;
    }
    return q->lib.exit_pipeline_mode(q->conn) ? 0 : pq_failed(q, NULL);
}

static void pq_clear(void *state) {
    Pq *q = state;
    for (int k = 0; k < MAX_QUEUED; k++) {
        if (q->results[k] != NULL) q->lib.clear(q->results[k]);
        q->results[k] = NULL;
    }
    q->count = q->param_count = 0;
    q->arena.size = 0;
}

static int pq_rows(void *state, int k) {
    Pq *q = state;
    return q->results[k] ? q->lib.ntuples(q->results[k]) : 0;
}

static int pq_columns(void *state, int k) {
    Pq *q = state;
    return q->results[k] ? q->lib.nfields(q->results[k]) : 0;
}

static int pq_is_null(void *state, int k, int row, int column) {
    Pq *q = state;
    return q->lib.get_is_null(q->results[k], row, column);
}

static long long pq_integer(void *state, int k, int row, int column) {
    Pq *q = state;
    return strtoll(q->lib.get_value(q->results[k], row, column), NULL, 10);
}

static long long pq_cents(void *state, int k, int row, int column) {
    Pq *q = state;
    return text_cents(q->lib.get_value(q->results[k], row, column));
}

static const char *pq_text(void *state, int k, int row, int column, int *length) {
    Pq *q = state;
    *length = q->lib.get_length(q->results[k], row, column);
    return q->lib.get_value(q->results[k], row, column);
}

/* A column as psycopg reads it: integers, strings (the connection's encoding is UTF-8: native.py) and floats
 * here; the other types (NUMERIC, TIMESTAMP) by psycopg's own loaders (``load``). */
static PyObject *pq_value(void *state, int k, int row, int column) {
    Pq *q = state;
    PGresult *result = q->results[k];
    if (q->lib.get_is_null(result, row, column)) Py_RETURN_NONE;
    const char *text = q->lib.get_value(result, row, column);
    int length = q->lib.get_length(result, row, column);
    Oid type = q->lib.ftype(result, column);
    switch (type) {
    case INT2OID: case INT4OID: case INT8OID: case OIDOID: return PyLong_FromLongLong(strtoll(text, NULL, 10));
    case TEXTOID: case VARCHAROID: case BPCHAROID: case NAMEOID: return PyUnicode_DecodeUTF8(text, length, NULL);
    case FLOAT4OID: case FLOAT8OID: return PyFloat_FromDouble(strtod(text, NULL));
    default: return PyObject_CallFunction(q->load, "Iy#", type, text, (Py_ssize_t)length);
    }
}

/* The statements prepared on the server stay there until the connection closes: the connection may be closed,
 * and its PGconn freed, before this object goes. */
static void pq_release(void *state) {
    Pq *q = state;
    if (q->lib.clear != NULL) pq_clear(q);
    Py_XDECREF(q->load);
    PyMem_Free(q->arena.data);
}

static const Backend LIBPQ_BACKEND = {
    "libpq", sizeof(PqLibrary) / sizeof(void (*)(void)), sizeof(Pq), pq_init, pq_prepare, pq_queue, pq_send,
    pq_clear, pq_rows, pq_columns, pq_is_null, pq_integer, pq_cents, pq_text, pq_value, pq_release, NULL,
};
