/* The pump's machine, shared by the C pumps over a client library (_libpq_pump.c, _mariadb_pump.c): keeps one
 * call in flight on each of several connections and sends each connection's next call as soon as its result is
 * in, without returning to Python between calls.
 *
 * Python hands a connection ("slot") a list of calls and hears back only when the list is used up, a call fails
 * or the slot's end time has passed: a few times per batch of calls instead of a dozen Python frames per call. A
 * call to queue (a deferred transaction) goes to the queue slot's list, which that slot runs as it grows
 * (engines/pump.py explains the events and the queue; PythonPump there is the same machine in Python, and the
 * reference the tests hold these to).
 *
 * The client library is not linked: its functions are those of the library the Python driver loaded, whose
 * addresses Python passes in, so every connection is handled by the library that made it.
 *
 * The file including this one defines, before it:
 *   Driver                    the table of the library's functions, DRIVER_FUNCTIONS pointers in the order
 *                             Python passes their addresses;
 *   DRIVER_LIBRARY            the library's name, for messages ("libpq");
 *   DRIVER_TYPE_NAME          the Pump type's qualified name;
 * and, after it, the functions declared below under "the driver".
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

enum { EV_DONE = 0, EV_FAILED = 2, EV_END = 3 };  /* engines/pump.py */

typedef struct {
    void *conn;
    PyObject *statements;  /* dict: SQL text -> the driver's form of it (prepared statement, pieces), the session's */
    PyObject *prepare;     /* callable: SQL text -> that form, recording it in statements */
    PyObject *calls;       /* list of (sql, params, ...) to send; NULL when the slot is stopped */
    Py_ssize_t next;       /* index of the call to send next */
    Py_ssize_t current;    /* index of the call in flight, -1 when none */
    double started, end;
    PyObject *times;       /* [started, finished, ...] of the calls completed since the last give */
    void *pending;         /* the driver's state of the call in flight (libpq: its first result) */
} Slot;

typedef struct {
    PyObject_HEAD
    int ready;  /* __init__ has filled in the library's functions */
    Driver lib;
    Slot *slots;
    Py_ssize_t count, capacity;
    Py_ssize_t queue_slot;  /* the slot that runs the queued calls, or -1 */
    PyObject *queue;        /* its list: (sql, params, request, queued at) */
    PyObject *values;       /* the first values (bytes or None) of the calls it completed, until asked */
    struct pollfd *fds;
    Py_ssize_t *fd_slots;
} Pump;

/* -- the driver: what the including file defines -- */

/* The connection's socket, to poll for its result. */
static int driver_socket(Pump *pump, Slot *slot);
/* Send a call: the statement's form (as `prepare` made it) with the call's parameters (a fast sequence). 1 when
 * it is in flight, 0 when the connection failed (driver_connection_error says why), -1 on a Python exception,
 * which fails the call (a parameter of the wrong type). */
static int driver_send(Pump *pump, Slot *slot, PyObject *form, PyObject *params);
/* Read what has arrived: 1 when the call's results are complete, 0 while it runs, -1 if the connection failed. */
static int driver_drain(Pump *pump, Slot *slot);
/* The call is over (`state` as driver_drain returned it, 1 or -1): 0 when it succeeded, with *out its first
 * value (bytes or None) when `keep` is set; 1 when it failed, with *out the error for Python, (sqlstate, message)
 * or the driver's own form; -1 on a Python error. The pending state is released either way. */
static int driver_finish(Pump *pump, Slot *slot, int state, int keep, PyObject **out);
/* The connection's failure, as driver_finish gives an error. */
static PyObject *driver_connection_error(Pump *pump, Slot *slot);
/* Release the pending state of a call still in flight when the pump goes. */
static void driver_release(Pump *pump, Slot *slot);

/* -- the machine -- */

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

/* The statement's form, a new reference: the session's, or prepared now (the first call of a statement waits). */
static PyObject *statement_form(Slot *slot, PyObject *sql) {
    PyObject *form = PyDict_GetItemWithError(slot->statements, sql);  /* borrowed */
    if (form != NULL) return Py_NewRef(form);
    if (PyErr_Occurred()) return NULL;
    form = PyObject_CallOneArg(slot->prepare, sql);
    if (form == NULL) return NULL;
    Py_DECREF(form);  /* the session's dict holds it */
    form = PyDict_GetItemWithError(slot->statements, sql);
    if (form == NULL && !PyErr_Occurred()) PyErr_SetString(PyExc_RuntimeError, "prepare did not record the statement");
    return form ? Py_NewRef(form) : NULL;
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

/* Send the call (sql, params, ...) at `index`: as send_next returns. */
static int send_call(Pump *pump, Py_ssize_t slot_index, PyObject *events, PyObject *call, Py_ssize_t index,
                     double now) {
    Slot *slot = &pump->slots[slot_index];
    PyObject *form = NULL, *params = NULL;
    Py_INCREF(call);  /* preparing runs Python code: the call must outlive whatever it does */
    if (!PyTuple_Check(call) || PyTuple_GET_SIZE(call) < 2) {
        PyErr_SetString(PyExc_TypeError, "a call is (sql, params), or (sql, params, request) to queue");
    } else if ((form = statement_form(slot, PyTuple_GET_ITEM(call, 0))) != NULL) {
        params = PySequence_Fast(PyTuple_GET_ITEM(call, 1), "a call's params must be a sequence");
    }
    int sent = params == NULL ? -1 : driver_send(pump, slot, form, params);
    Py_XDECREF(params);
    Py_XDECREF(form);
    Py_DECREF(call);
    if (sent < 0) return fail_with_exception(events, slot_index, slot, index, now);  /* that call fails */
    if (sent == 0) {
        PyObject *error = driver_connection_error(pump, slot);
        if (error == NULL) return -1;
        int failed = fail_call(events, slot_index, slot, index, now, error);
        Py_DECREF(error);
        return failed;
    }
    slot->current = index;
    slot->started = now;
    return 1;
}

/* Send the slot's next call: 1 when a call is in flight, 0 when the slot stopped (an event was
 * emitted) or, for the queue slot, waits for a queued call, -1 on a Python error that is not the call's.
 * Calls to queue are queued on the way. A call at `next` is sent even after the slot's end when `resend`
 * is set (a retry of a transaction already started). */
static int send_next(Pump *pump, Py_ssize_t slot_index, PyObject *events, int resend) {
    Slot *slot = &pump->slots[slot_index];
    Py_ssize_t index = slot->next;
    double now = monotonic_now();
    for (;; index = ++slot->next, resend = 0, now = monotonic_now()) {
        if (index >= PyList_GET_SIZE(slot->calls)) {
            if (slot_index == pump->queue_slot) return 0;
            return emit(events, slot_index, slot, EV_DONE, index, NULL);
        }
        if (!resend && now >= slot->end) return emit(events, slot_index, slot, EV_END, index, NULL);
        PyObject *call = PyList_GET_ITEM(slot->calls, index);
        if (!PyTuple_Check(call) || PyTuple_GET_SIZE(call) != 3 || slot_index == pump->queue_slot)
            return send_call(pump, slot_index, events, call, index, now);
        Py_INCREF(call);
        int failed = queue_call(pump, slot, call, now, events);
        Py_DECREF(call);
        if (failed) return fail_with_exception(events, slot_index, slot, index, now);
    }
}

/* The call in flight on the slot is over: record it and send the next, or report a failure. */
static int collect(Pump *pump, Py_ssize_t slot_index, PyObject *events) {
    Slot *slot = &pump->slots[slot_index];
    int state = driver_drain(pump, slot);
    if (state == 0) return 0;
    double now = monotonic_now();
    Py_ssize_t index = slot->current;
    slot->current = -1;
    PyObject *out = NULL;
    int outcome = driver_finish(pump, slot, state, slot_index == pump->queue_slot, &out);
    if (outcome < 0 || append_time(slot->times, slot->started) || append_time(slot->times, now)) {
        Py_XDECREF(out);
        Py_CLEAR(slot->calls);
        return -1;
    }
    if (outcome == 1) {
        int failed = emit(events, slot_index, slot, EV_FAILED, index, out);
        Py_DECREF(out);
        return failed;
    }
    if (out != NULL) {  /* the queue slot's value */
        int failed = PyList_Append(pump->values, out);
        Py_DECREF(out);
        if (failed) {
            Py_CLEAR(slot->calls);
            return -1;
        }
    }
    slot->next = index + 1;
    return send_next(pump, slot_index, events, 0) < 0 ? -1 : 0;
}

/* -- the Pump type -- */

static int Pump_init(Pump *self, PyObject *args, PyObject *kwargs) {
    PyObject *addresses;
    if (!PyArg_ParseTuple(args, "O!", &PyTuple_Type, &addresses)) return -1;
    if (PyTuple_GET_SIZE(addresses) != DRIVER_FUNCTIONS) {
        PyErr_Format(PyExc_ValueError, "expected the addresses of %d %s functions", DRIVER_FUNCTIONS, DRIVER_LIBRARY);
        return -1;
    }
    void **table = (void **)&self->lib;
    for (Py_ssize_t n = 0; n < DRIVER_FUNCTIONS; n++) {
        void *address = PyLong_AsVoidPtr(PyTuple_GET_ITEM(addresses, n));
        if (address == NULL) {
            if (!PyErr_Occurred()) PyErr_Format(PyExc_ValueError, "a %s function's address is NULL", DRIVER_LIBRARY);
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
    PyErr_Format(PyExc_RuntimeError, "the pump was not given %s's functions", DRIVER_LIBRARY);
    return 1;
}

static void Pump_dealloc(Pump *self) {
    for (Py_ssize_t n = 0; n < self->count; n++) {
        Slot *slot = &self->slots[n];
        Py_XDECREF(slot->statements);
        Py_XDECREF(slot->prepare);
        Py_XDECREF(slot->calls);
        Py_XDECREF(slot->times);
        if (slot->pending) driver_release(self, slot);
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
    PyObject *address, *statements, *prepare;
    if (!PyArg_ParseTuple(args, "OO!O", &address, &PyDict_Type, &statements, &prepare)) return NULL;
    void *conn = PyLong_AsVoidPtr(address);
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
    slot->statements = Py_NewRef(statements);
    slot->prepare = Py_NewRef(prepare);
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
    Py_XSETREF(slot->calls, Py_NewRef(calls));
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
            self->fds[count].fd = driver_socket(self, &self->slots[n]);
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
    self->queue = Py_NewRef(queue);
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
    {"add", (PyCFunction)Pump_add, METH_VARARGS, "add(connection address, statements, prepare) -> slot"},
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
    .tp_name = DRIVER_TYPE_NAME,
    .tp_basicsize = sizeof(Pump),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Calls in flight on several " DRIVER_LIBRARY " connections (engines/pump.py).",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Pump_init,
    .tp_dealloc = (destructor)Pump_dealloc,
    .tp_methods = Pump_methods,
};

/* The module with the Pump type. */
static PyObject *module_with_pump(struct PyModuleDef *definition) {
    if (PyType_Ready(&PumpType) < 0) return NULL;
    PyObject *m = PyModule_Create(definition);
    if (m == NULL) return NULL;
    Py_INCREF(&PumpType);
    if (PyModule_AddObject(m, "Pump", (PyObject *)&PumpType) < 0) {
        Py_DECREF(&PumpType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

/* -- text: a buffer that grows, for the parameters' forms -- */

typedef struct {
    char *data;
    Py_ssize_t size, capacity;
    char inline_space[512];
} Text;

#define TEXT_INIT(text) {.data = (text).inline_space, .size = 0, .capacity = sizeof (text).inline_space}

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

static void text_free(Text *text) {
    if (text->data != text->inline_space) PyMem_Free(text->data);
}

/* An exact int's digits, as str() writes them: 1, or 0 when it does not fit in a long long, -1 on error. The
 * digits are written backwards from the end of a buffer: snprintf costs twice as much. */
static int text_add_int(Text *text, PyObject *value) {
    int overflow;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (number == -1 && PyErr_Occurred()) return -1;
    if (overflow) return 0;
    char digits[24], *first = digits + sizeof digits;
    unsigned long long magnitude = number < 0 ? 0ULL - (unsigned long long)number : (unsigned long long)number;
    do *--first = (char)('0' + magnitude % 10); while ((magnitude /= 10) != 0);
    if (number < 0) *--first = '-';
    return text_add(text, first, digits + sizeof digits - first) < 0 ? -1 : 1;
}
