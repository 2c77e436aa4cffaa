/* The libpq pump: keeps one call in flight on each of several PostgreSQL connections and sends each
 * connection's next call as soon as its result is in, without returning to Python between calls.
 *
 * Python hands a connection ("slot") a list of calls and hears back only when the list is used up, a
 * call fails or the slot's end time has passed: a few times per batch of calls instead of a dozen Python
 * frames per call. A call to queue (a deferred transaction) goes to the queue slot's list, which that
 * slot runs as it grows (engines/pump.py explains the events and the queue; PythonPump there is the
 * same machine in Python, and the reference the tests hold this one to).
 *
 * libpq is not linked: the functions are those of the libpq psycopg loaded, whose addresses Python
 * passes in (engines/postgres.py), so every PGconn is handled by the library that made it.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

enum { PGRES_COMMAND_OK = 1, PGRES_TUPLES_OK = 2 };       /* ExecStatusType */
enum { DIAG_SQLSTATE = 'C' };                            /* PG_DIAG_SQLSTATE */
enum { EV_DONE = 0, EV_FAILED = 2, EV_END = 3 };      /* engines/pump.py */
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
} Libpq;

#define LIBPQ_FUNCTIONS 15

typedef struct {
    PGconn *conn;
    PyObject *names;     /* dict: SQL text -> prepared statement name (bytes), the session's own */
    PyObject *prepare;   /* callable: SQL text -> name, preparing it on the (idle) connection */
    PyObject *calls;     /* list of (sql, params, ...) to send; NULL when the slot is stopped */
    Py_ssize_t next;     /* index of the call to send next */
    Py_ssize_t current;  /* index of the call in flight, -1 when none */
    double started, end;
    PyObject *times;     /* [started, finished, ...] of the calls completed since the last give */
    PGresult *result;    /* the first result of the call in flight */
} Slot;

typedef struct {
    PyObject_HEAD
    int ready;  /* __init__ has filled in the libpq functions */
    Libpq pq;
    Slot *slots;
    Py_ssize_t count, capacity;
    Py_ssize_t queue_slot;  /* the slot that runs the queued calls, or -1 */
    PyObject *queue;        /* its list: (sql, params, request, queued at) */
    PyObject *values;       /* the first values (bytes or None) of the calls it completed, until asked */
    struct pollfd *fds;
    Py_ssize_t *fd_slots;
} Pump;

static double monotonic_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);  /* what time.monotonic() reads on Linux */
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int append_time(PyObject *list, double value) {
    PyObject *number = PyFloat_FromDouble(value);
    if (number == NULL) return -1;
    int failed = PyList_Append(list, number);
    Py_DECREF(number);
    return failed;
}

/* Stop the slot and report why: (slot, kind, index, times, error). The slot is idle afterwards. */
static int emit(PyObject *events, Py_ssize_t slot_index, Slot *slot, int kind, Py_ssize_t index, PyObject *error) {
    PyObject *event = Py_BuildValue("(ninNO)", slot_index, kind, index, slot->times, error ? error : Py_None);
    slot->times = NULL;  /* the event owns them now */
    Py_CLEAR(slot->calls);
    slot->current = -1;
    if (event == NULL) return -1;
    int failed = PyList_Append(events, event);
    Py_DECREF(event);
    return failed;
}

static PyObject *connection_error(Pump *pump, Slot *slot) {
    return Py_BuildValue("(Oy)", Py_None, pump->pq.error_message(slot->conn));
}

static PyObject *result_error(Pump *pump, PGresult *result) {
    const char *state = pump->pq.result_error_field(result, DIAG_SQLSTATE);
    const char *message = pump->pq.result_error_message(result);
    if (state == NULL) return Py_BuildValue("(Oy)", Py_None, message ? message : "");
    return Py_BuildValue("(yy)", state, message ? message : "");
}

static const char *statement_name(Slot *slot, PyObject *sql) {
    PyObject *name = PyDict_GetItemWithError(slot->names, sql);  /* borrowed */
    if (name == NULL) {
        if (PyErr_Occurred()) return NULL;
        name = PyObject_CallOneArg(slot->prepare, sql);  /* the first call of a statement waits for it */
        if (name == NULL) return NULL;
        Py_DECREF(name);  /* the session's dict holds it */
        name = PyDict_GetItemWithError(slot->names, sql);
        if (name == NULL) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "prepare did not record the statement");
            return NULL;
        }
    }
    if (!PyBytes_Check(name)) {
        PyErr_SetString(PyExc_TypeError, "a prepared statement's name must be bytes");
        return NULL;
    }
    return PyBytes_AS_STRING(name);
}

/* The slot's call at `index`, started at `started`, failed with `error`: its times, then FAILED. */
static int fail_call(PyObject *events, Py_ssize_t slot_index, Slot *slot, Py_ssize_t index, double started,
                     PyObject *error) {
    if (append_time(slot->times, started) || append_time(slot->times, monotonic_now())) return -1;
    return emit(events, slot_index, slot, EV_FAILED, index, error);
}

/* The Python exception being raised fails the slot's call at `index` (FAILED), as the session's own
 * send would: 0, or -1 to let it propagate when it is not an Exception (KeyboardInterrupt, SystemExit). */
static int fail_with_exception(PyObject *events, Py_ssize_t slot_index, Slot *slot, Py_ssize_t index,
                               double started) {
    if (!PyErr_ExceptionMatches(PyExc_Exception)) {
        Py_CLEAR(slot->calls);
        slot->current = -1;
        return -1;
    }
    PyObject *type, *value, *traceback;
    PyErr_Fetch(&type, &value, &traceback);
    PyErr_NormalizeException(&type, &value, &traceback);
    Py_XDECREF(type);
    Py_XDECREF(traceback);
    if (value == NULL) return -1;
    int failed = fail_call(events, slot_index, slot, index, started, value);
    Py_DECREF(value);
    return failed;
}

/* Send what is still in libpq's output buffer: psycopg's connections are nonblocking, so a send may
 * leave part of a call there when the socket's buffer is full. 0, or -1 if the connection failed. */
static int flush_all(Pump *pump, Slot *slot) {
    int state;
    while ((state = pump->pq.flush(slot->conn)) == 1) {
        struct pollfd writable = {.fd = pump->pq.socket(slot->conn), .events = POLLOUT};
        Py_BEGIN_ALLOW_THREADS
        poll(&writable, 1, -1);
        Py_END_ALLOW_THREADS
    }
    return state;
}

static int send_next(Pump *pump, Py_ssize_t slot_index, PyObject *events, int resend);

/* A call (sql, params, request) reached at `index` on another slot at `now`: (sql, params, request, now)
 * joins the queue, which its slot starts on if it waits for one, and the call counts as over at once. */
static int queue_call(Pump *pump, Slot *slot, PyObject *call, double now, PyObject *events) {
    if (pump->queue == NULL) {
        PyErr_SetString(PyExc_TypeError, "a call to queue needs a queue slot (queue_on)");
        return -1;
    }
    PyObject *when = PyFloat_FromDouble(now);
    if (when == NULL) return -1;
    PyObject *queued = PyTuple_Pack(4, PyTuple_GET_ITEM(call, 0), PyTuple_GET_ITEM(call, 1),
                                    PyTuple_GET_ITEM(call, 2), when);
    Py_DECREF(when);
    int failed = queued == NULL || PyList_Append(pump->queue, queued) < 0;
    Py_XDECREF(queued);
    if (failed || append_time(slot->times, now) || append_time(slot->times, now)) return -1;
    Slot *runner = &pump->slots[pump->queue_slot];
    if (runner->calls != NULL && runner->current < 0)  /* waiting for a queued call: this one */
        return send_next(pump, pump->queue_slot, events, 0) < 0 ? -1 : 0;
    return 0;
}

/* Send the slot's next call: 1 when a call is in flight, 0 when the slot stopped (an event was
 * emitted) or, for the queue slot, waits for a queued call, -1 on a Python error that is not the call's.
 * Calls to queue are queued on the way. A call at `next` is sent even after the slot's end when `resend`
 * is set (a retry of a transaction already started). */
static int send_next(Pump *pump, Py_ssize_t slot_index, PyObject *events, int resend) {
    Slot *slot = &pump->slots[slot_index];
    Py_ssize_t index = slot->next;
    double now = monotonic_now();
    PyObject *call;
    for (;; index = ++slot->next, resend = 0, now = monotonic_now()) {
        if (index >= PyList_GET_SIZE(slot->calls)) {
            if (slot_index == pump->queue_slot) return 0;
            return emit(events, slot_index, slot, EV_DONE, index, NULL);
        }
        if (!resend && now >= slot->end) return emit(events, slot_index, slot, EV_END, index, NULL);
        call = PyList_GET_ITEM(slot->calls, index);
        if (!PyTuple_Check(call) || PyTuple_GET_SIZE(call) != 3 || slot_index == pump->queue_slot) break;
        Py_INCREF(call);
        int failed = queue_call(pump, slot, call, now, events);
        Py_DECREF(call);
        if (failed) return fail_with_exception(events, slot_index, slot, index, now);
    }
    Py_INCREF(call);  /* preparing runs Python code: the call must outlive whatever it does */
    const char *values[MAX_PARAMS];
    PyObject *params = NULL;
    const char *name = NULL;
    if (!PyTuple_Check(call) || PyTuple_GET_SIZE(call) < 2) {
        PyErr_SetString(PyExc_TypeError, "a call is (sql, params), or (sql, params, request) to queue");
    } else if ((name = statement_name(slot, PyTuple_GET_ITEM(call, 0))) != NULL) {
        params = PySequence_Fast(PyTuple_GET_ITEM(call, 1), "a call's params must be a sequence");
    }
    Py_ssize_t count = params ? PySequence_Fast_GET_SIZE(params) : 0;
    if (params && count > MAX_PARAMS) {
        PyErr_SetString(PyExc_ValueError, "too many parameters for one call");
        Py_CLEAR(params);
    }
    for (Py_ssize_t n = 0; params && n < count; n++) {
        PyObject *value = PySequence_Fast_GET_ITEM(params, n);
        if (value == Py_None) {
            values[n] = NULL;
        } else if (PyBytes_Check(value)) {
            values[n] = PyBytes_AS_STRING(value);
        } else {
            PyErr_SetString(PyExc_TypeError, "a call's parameters must be bytes (text form) or None");
            Py_CLEAR(params);
        }
    }
    if (params == NULL) {  /* not a call, or a statement that could not be prepared: that call fails */
        Py_DECREF(call);
        return fail_with_exception(events, slot_index, slot, index, now);
    }
    int sent = pump->pq.send_query_prepared(slot->conn, name, (int)count, values, NULL, NULL, 0);
    Py_DECREF(params);  /* libpq has copied the values into its output buffer */
    Py_DECREF(call);
    if (!sent || flush_all(pump, slot) < 0) {
        PyObject *error = connection_error(pump, slot);
        if (error == NULL) return -1;
        int failed = fail_call(events, slot_index, slot, index, now, error);
        Py_DECREF(error);
        return failed;
    }
    slot->current = index;
    slot->started = now;
    return 1;
}

/* Read what has arrived: 1 when the call's results are complete, 0 while it runs, -1 if the
 * connection failed. */
static int drain(Pump *pump, Slot *slot) {
    if (!pump->pq.consume_input(slot->conn)) return -1;
    while (!pump->pq.is_busy(slot->conn)) {
        PGresult *result = pump->pq.get_result(slot->conn);
        if (result == NULL) return 1;  /* libpq ends every query's results with a NULL */
        if (slot->result == NULL) slot->result = result;
        else pump->pq.clear(result);
    }
    return 0;
}

/* Keep the first value of a queue slot's call, as the session's call() returns it: bytes, or None. */
static int keep_value(Pump *pump, PGresult *result) {
    PyObject *value;
    if (pump->pq.ntuples(result) < 1 || pump->pq.get_is_null(result, 0, 0)) {
        value = Py_NewRef(Py_None);
    } else {
        value = PyBytes_FromStringAndSize(pump->pq.get_value(result, 0, 0), pump->pq.get_length(result, 0, 0));
        if (value == NULL) return -1;
    }
    int failed = PyList_Append(pump->values, value);
    Py_DECREF(value);
    return failed;
}

/* The call in flight on the slot is over: record it and send the next, or report a failure. */
static int collect(Pump *pump, Py_ssize_t slot_index, PyObject *events) {
    Slot *slot = &pump->slots[slot_index];
    int state = drain(pump, slot);
    if (state == 0) return 0;
    double now = monotonic_now();
    Py_ssize_t index = slot->current;
    PGresult *result = slot->result;
    slot->result = NULL;
    slot->current = -1;
    if (append_time(slot->times, slot->started) || append_time(slot->times, now)) {
        if (result) pump->pq.clear(result);
        Py_CLEAR(slot->calls);
        return -1;
    }
    int status = result ? pump->pq.result_status(result) : -1;
    if (state == 1 && (status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK)) {
        if (slot_index == pump->queue_slot && keep_value(pump, result) < 0) {
            pump->pq.clear(result);
            Py_CLEAR(slot->calls);
            return -1;
        }
        pump->pq.clear(result);
        slot->next = index + 1;
        return send_next(pump, slot_index, events, 0) < 0 ? -1 : 0;
    }
    PyObject *error = (state < 0 || result == NULL) ? connection_error(pump, slot) : result_error(pump, result);
    if (result) pump->pq.clear(result);
    if (error == NULL) return -1;
    int failed = emit(events, slot_index, slot, EV_FAILED, index, error);
    Py_DECREF(error);
    return failed;
}

static int Pump_init(Pump *self, PyObject *args, PyObject *kwargs) {
    PyObject *addresses;
    if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &addresses)) return -1;
    if (PyTuple_GET_SIZE(addresses) != LIBPQ_FUNCTIONS) {
        PyErr_Format(PyExc_ValueError, "expected the addresses of %d libpq functions", LIBPQ_FUNCTIONS);
        return -1;
    }
    void **table = (void **)&self->pq;
    for (Py_ssize_t n = 0; n < LIBPQ_FUNCTIONS; n++) {
        void *address = PyLong_AsVoidPtr(PyTuple_GET_ITEM(addresses, n));
        if (address == NULL) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "a libpq function's address is NULL");
            return -1;
        }
        table[n] = address;
    }
    if (self->queue == NULL) self->queue_slot = -1;  /* __init__ again keeps a queue slot's */
    self->ready = 1;
    return 0;
}

static int not_ready(Pump *self) {
    if (self->ready) return 0;
    PyErr_SetString(PyExc_RuntimeError, "the pump was not given libpq's functions");
    return 1;
}

static void Pump_dealloc(Pump *self) {
    for (Py_ssize_t n = 0; n < self->count; n++) {
        Slot *slot = &self->slots[n];
        Py_XDECREF(slot->names);
        Py_XDECREF(slot->prepare);
        Py_XDECREF(slot->calls);
        Py_XDECREF(slot->times);
        if (slot->result) self->pq.clear(slot->result);
    }
    Py_XDECREF(self->queue);
    Py_XDECREF(self->values);
    free(self->slots);
    free(self->fds);
    free(self->fd_slots);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *Pump_add(Pump *self, PyObject *args) {
    if (not_ready(self)) return NULL;
    PyObject *address, *names, *prepare;
    if (!PyArg_ParseTuple(args, "OO!O", &address, &PyDict_Type, &names, &prepare)) return NULL;
    PGconn *conn = PyLong_AsVoidPtr(address);
    if (conn == NULL) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "the connection's address is NULL");
        return NULL;
    }
    if (self->count == self->capacity) {
        Py_ssize_t capacity = self->capacity ? 2 * self->capacity : 8;
        Slot *slots = realloc(self->slots, capacity * sizeof(Slot));
        if (slots == NULL) return PyErr_NoMemory();
        self->slots = slots;
        struct pollfd *fds = realloc(self->fds, capacity * sizeof(struct pollfd));
        if (fds == NULL) return PyErr_NoMemory();
        self->fds = fds;
        Py_ssize_t *fd_slots = realloc(self->fd_slots, capacity * sizeof(Py_ssize_t));
        if (fd_slots == NULL) return PyErr_NoMemory();
        self->fd_slots = fd_slots;
        self->capacity = capacity;
    }
    Slot *slot = &self->slots[self->count];
    memset(slot, 0, sizeof(Slot));
    slot->conn = conn;
    Py_INCREF(names);
    slot->names = names;
    Py_INCREF(prepare);
    slot->prepare = prepare;
    slot->current = -1;
    return PyLong_FromSsize_t(self->count++);
}

static PyObject *Pump_give(Pump *self, PyObject *args) {
    Py_ssize_t slot_index, start;
    PyObject *calls;
    double end;
    int resend = 0;
    if (!PyArg_ParseTuple(args, "nO!nd|p", &slot_index, &PyList_Type, &calls, &start, &end, &resend)) return NULL;
    if (slot_index < 0 || slot_index >= self->count || start < 0) {
        PyErr_SetString(PyExc_IndexError, "no such slot, or a negative start");
        return NULL;
    }
    Slot *slot = &self->slots[slot_index];
    if (slot->current >= 0) {
        PyErr_SetString(PyExc_RuntimeError, "the slot has a call in flight");
        return NULL;
    }
    PyObject *events = PyList_New(0);
    if (events == NULL) return NULL;
    Py_XSETREF(slot->times, PyList_New(0));
    if (slot->times == NULL) {
        Py_DECREF(events);
        return NULL;
    }
    Py_INCREF(calls);
    Py_XSETREF(slot->calls, calls);
    slot->next = start;
    slot->end = end;
    if (send_next(self, slot_index, events, resend) < 0) {
        Py_DECREF(events);
        return NULL;
    }
    return events;
}

/* Wait until a slot stops (an event) or `timeout_s` has passed, sending every slot's next call as soon
 * as its result is in: between two events Python does not run. */
static PyObject *Pump_wait(Pump *self, PyObject *args) {
    double timeout_s;
    if (not_ready(self) || !PyArg_ParseTuple(args, "d", &timeout_s)) return NULL;
    PyObject *events = PyList_New(0);
    if (events == NULL) return NULL;
    double deadline = monotonic_now() + (timeout_s > 0 ? timeout_s : 0);
    for (;;) {
        nfds_t count = 0;
        for (Py_ssize_t n = 0; n < self->count; n++) {
            if (self->slots[n].current < 0) continue;
            self->fds[count].fd = self->pq.socket(self->slots[n].conn);
            self->fds[count].events = POLLIN;
            self->fds[count].revents = 0;
            self->fd_slots[count++] = n;
        }
        double left = deadline - monotonic_now();
        if (count == 0) return events;
        int ready, timeout_ms = left <= 0 ? 0 : left >= INT_MAX / 1000 ? INT_MAX : (int)ceil(left * 1000.0);
        Py_BEGIN_ALLOW_THREADS  /* self->fds is this call's own: a pump serves one thread */
        ready = poll(self->fds, count, timeout_ms);
        Py_END_ALLOW_THREADS
        if (ready < 0) {
            if (errno == EINTR) {  /* as Python's own calls do (PEP 475): handlers first, then on */
                if (PyErr_CheckSignals() < 0) {
                    Py_DECREF(events);
                    return NULL;
                }
                continue;
            }
            Py_DECREF(events);
            return PyErr_SetFromErrno(PyExc_OSError);
        }
        for (nfds_t n = 0; n < count && ready > 0; n++) {
            if (!self->fds[n].revents) continue;
            ready--;
            if (collect(self, self->fd_slots[n], events) < 0) {
                Py_DECREF(events);
                return NULL;
            }
        }
        if (PyList_GET_SIZE(events) > 0 || left <= 0) return events;
    }
}

/* The slot becomes the queue slot: the calls (sql, params, request) other slots reach join `queue` as
 * (sql, params, request, queued at). Given that list (give), it sends them in order as it grows, never
 * reporting DONE. */
static PyObject *Pump_queue_on(Pump *self, PyObject *args) {
    Py_ssize_t slot_index;
    PyObject *queue;
    if (not_ready(self) || !PyArg_ParseTuple(args, "nO!", &slot_index, &PyList_Type, &queue)) return NULL;
    if (slot_index < 0 || slot_index >= self->count || self->queue != NULL) {
        PyErr_SetString(PyExc_ValueError, "no such slot, or the pump has a queue slot already");
        return NULL;
    }
    PyObject *values = PyList_New(0);
    if (values == NULL) return NULL;
    Py_INCREF(queue);
    self->queue = queue;
    self->values = values;
    self->queue_slot = slot_index;
    Py_RETURN_NONE;
}

/* The first values of the calls the queue slot completed since it was last asked (none for another slot). */
static PyObject *Pump_values(Pump *self, PyObject *args) {
    Py_ssize_t slot_index;
    if (not_ready(self) || !PyArg_ParseTuple(args, "n", &slot_index)) return NULL;
    if (slot_index != self->queue_slot) return PyList_New(0);
    PyObject *fresh = PyList_New(0);
    if (fresh == NULL) return NULL;
    PyObject *values = self->values;
    self->values = fresh;
    return values;
}

/* The times of the calls the slot completed since it was last given calls or asked: its progress
 * between events, for the queue slot, which reports no DONE. */
static PyObject *Pump_progress(Pump *self, PyObject *args) {
    Py_ssize_t slot_index;
    if (not_ready(self) || !PyArg_ParseTuple(args, "n", &slot_index)) return NULL;
    if (slot_index < 0 || slot_index >= self->count) {
        PyErr_SetString(PyExc_IndexError, "no such slot");
        return NULL;
    }
    Slot *slot = &self->slots[slot_index];
    PyObject *times = slot->times;
    if (times == NULL) return PyList_New(0);  /* stopped: its event took them */
    slot->times = PyList_New(0);
    if (slot->times == NULL) {
        slot->times = times;
        return NULL;
    }
    return times;
}

static PyObject *Pump_end_all(Pump *self, PyObject *args) {
    double end;
    if (!PyArg_ParseTuple(args, "d", &end)) return NULL;
    for (Py_ssize_t n = 0; n < self->count; n++) {
        if (self->slots[n].end > end) self->slots[n].end = end;
    }
    Py_RETURN_NONE;
}

static PyObject *Pump_in_flight(Pump *self, PyObject *unused) {
    Py_ssize_t busy = 0;
    for (Py_ssize_t n = 0; n < self->count; n++) busy += self->slots[n].current >= 0;
    return PyLong_FromSsize_t(busy);
}

static PyMethodDef Pump_methods[] = {
    {"add", (PyCFunction)Pump_add, METH_VARARGS, "add(pgconn address, names, prepare) -> slot"},
    {"give", (PyCFunction)Pump_give, METH_VARARGS, "give(slot, calls, start, end, resend=False) -> events"},
    {"wait", (PyCFunction)Pump_wait, METH_VARARGS, "wait(timeout_s) -> events"},
    {"queue_on", (PyCFunction)Pump_queue_on, METH_VARARGS,
     "queue_on(slot, queue): the slot runs the queue, once given it"},
    {"progress", (PyCFunction)Pump_progress, METH_VARARGS, "progress(slot) -> times completed since last asked"},
    {"values", (PyCFunction)Pump_values, METH_VARARGS,
     "values(slot) -> the queue slot's first values of the calls completed since last asked"},
    {"end_all", (PyCFunction)Pump_end_all, METH_VARARGS, "end_all(end): no slot sends a call after end"},
    {"in_flight", (PyCFunction)Pump_in_flight, METH_NOARGS, "in_flight() -> slots with a call in flight"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject PumpType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "maximus.engines._libpq_pump.Pump",
    .tp_basicsize = sizeof(Pump),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Calls in flight on several libpq connections (engines/pump.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Pump_init,
    .tp_dealloc = (destructor)Pump_dealloc,
    .tp_methods = Pump_methods,
};

/* -- parameters in PostgreSQL's text input form: postgres.py's _text_parameters, which is the reference -- */

typedef struct {
    char *data;
    Py_ssize_t size, capacity;
    char inline_space[512];
} Text;

static int text_add(Text *text, const char *bytes, Py_ssize_t size) {
    if (text->size + size > text->capacity) {
        Py_ssize_t capacity = 2 * (text->size + size);
        char *grown = text->data == text->inline_space ? PyMem_Malloc(capacity) : PyMem_Realloc(text->data, capacity);
        if (grown == NULL) {
            PyErr_NoMemory();
            return -1;
        }
        if (text->data == text->inline_space) memcpy(grown, text->inline_space, text->size);
        text->data = grown;
        text->capacity = capacity;
    }
    memcpy(text->data + text->size, bytes, size);
    text->size += size;
    return 0;
}

/* str(value), as UTF-8; an int (not a bool) written out directly, as str() writes it. */
static int text_add_str(Text *text, PyObject *value) {
    if (PyLong_CheckExact(value)) {
        int overflow;
        long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
        if (number == -1 && PyErr_Occurred()) return -1;
        if (!overflow) {  /* the digits backwards from the end of the buffer: snprintf costs twice as much */
            char digits[24], *first = digits + sizeof digits;
            unsigned long long magnitude = number < 0 ? 0ULL - (unsigned long long)number : (unsigned long long)number;
            do *--first = (char)('0' + magnitude % 10); while ((magnitude /= 10) != 0);
            if (number < 0) *--first = '-';
            return text_add(text, first, digits + sizeof digits - first);
        }
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
    Text text = {.data = text.inline_space, .size = 0, .capacity = sizeof text.inline_space};
    int failed = PyTuple_CheckExact(value) || PyList_CheckExact(value) ? text_add_array(&text, value)
                                                                         : text_add_str(&text, value);
    PyObject *bytes = failed ? NULL : PyBytes_FromStringAndSize(text.data, text.size);
    if (text.data != text.inline_space) PyMem_Free(text.data);
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
    if (PyType_Ready(&PumpType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&PumpType);
    if (PyModule_AddObject(m, "Pump", (PyObject *)&PumpType) < 0) {
        Py_DECREF(&PumpType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
