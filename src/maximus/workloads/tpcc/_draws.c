/* A New-Order's order lines drawn in C: the same numbers, in the same order, from the same stream as
 * NewOrder.draw's loop in Python (new_order.py), which stays the reference and the fallback.
 *
 * The stream is the terminal's random.Random: every number comes from calling its bound ``random``
 * method, so a seed gives exactly the inputs it gave before; only the interpreter's work around each
 * call (the arithmetic, the closures, the list appends) moves to C. A busy terminal draws about a
 * thousand order lines a second.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <limits.h>
#include <string.h>

/* int(random() * span) in Python: the product in double precision, truncated toward zero. */
static int draw_below(PyObject *random, long span, long *out) {
    PyObject *value = PyObject_CallNoArgs(random);
    if (value == NULL) return -1;
    double r = PyFloat_AsDouble(value);
    if (!(r >= 0.0 && r < 1.0)) {  /* random.Random's always is; anything else might not convert to a long */
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "random() returned %R, not a number in [0, 1)", value);
        Py_DECREF(value);
        return -1;
    }
    Py_DECREF(value);
    *out = (long)(r * (double)span);
    return 0;
}

static int append_long(PyObject *list, long value) {
    PyObject *number = PyLong_FromLong(value);
    if (number == NULL) return -1;
    int failed = PyList_Append(list, number);
    Py_DECREF(number);
    return failed;
}

/* One line, as the Python loop draws it: the item (NURand, or the unused id on a rollback's last line),
 * the supply warehouse (remote with the given percent chance, drawn only with more than one warehouse),
 * then the quantity. */
static int draw_line(PyObject *random, long n, long count, int rollback, const long item[4], long w_id,
                     long warehouses, long remote_percent, long unused_item, const long quantity[2],
                     PyObject *items, PyObject *supplies, PyObject *quantities) {
    long a, b, value;
    if (rollback && n == count - 1) {
        value = unused_item;
    } else {  /* ((random(0, A) | random(x, y)) + C) % (y - x + 1) + x */
        if (draw_below(random, item[0], &a) < 0 || draw_below(random, item[2], &b) < 0) return -1;
        value = (((a | (item[1] + b)) + item[3]) % item[2]) + item[1];
    }
    if (append_long(items, value) < 0) return -1;
    value = w_id;
    if (warehouses > 1) {
        if (draw_below(random, 100, &a) < 0) return -1;
        if (1 + a <= remote_percent) {  /* another warehouse, uniformly */
            if (draw_below(random, warehouses - 1, &b) < 0) return -1;
            value = 1 + b >= w_id ? 2 + b : 1 + b;
        }
    }
    if (append_long(supplies, value) < 0) return -1;
    if (draw_below(random, quantity[1], &a) < 0) return -1;
    return append_long(quantities, quantity[0] + a);
}

static PyObject *order_lines(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *random;
    long count, w_id, warehouses, remote_percent, unused_item, item[4], quantity[2];
    int rollback;
    if (!PyArg_ParseTuple(args, "Olp(llll)llll(ll)", &random, &count, &rollback, &item[0], &item[1], &item[2],
                          &item[3], &w_id, &warehouses, &remote_percent, &unused_item, &quantity[0], &quantity[1]))
        return NULL;
    /* TPC-C's numbers are small: bounded, they cannot overflow a long in the arithmetic below, and the
     * remainder of non-negative numbers is the same in C as in Python. */
    long bounded[] = {item[0], item[1], item[2], item[3], w_id, warehouses, remote_percent, unused_item, quantity[0],
                      quantity[1]};
    for (size_t n = 0; n < sizeof bounded / sizeof bounded[0]; n++)
        if (bounded[n] < 0 || bounded[n] > INT_MAX) {
            PyErr_SetString(PyExc_ValueError, "order_lines: every number must be in 0..2**31-1");
            return NULL;
        }
    if (item[0] == 0 || item[2] == 0 || quantity[1] == 0) {
        PyErr_SetString(PyExc_ValueError, "order_lines: every span must be positive");
        return NULL;
    }
    PyObject *items = PyList_New(0), *supplies = PyList_New(0), *quantities = PyList_New(0);
    if (items == NULL || supplies == NULL || quantities == NULL) goto failed;
    for (long n = 0; n < count; n++)
        if (draw_line(random, n, count, rollback, item, w_id, warehouses, remote_percent, unused_item, quantity,
                      items, supplies, quantities) < 0)
            goto failed;
    return Py_BuildValue("(NNN)", items, supplies, quantities);
failed:
    Py_XDECREF(items);
    Py_XDECREF(supplies);
    Py_XDECREF(quantities);
    return NULL;
}

/* ---- A batch of transactions drawn in C --------------------------------------------------------------
 *
 * Drawer(...).draw(names) gives what TerminalEmulator's Python batch gives for the same names: a list of
 * (transaction, input) pairs, the input a Call of server_side.py in server-side mode, else the
 * transaction's own input. The same numbers come from the same stream in the same order as the Python
 * draws (new_order.py, payment.py, ...), which stay the reference and the fallback; named tuples are made
 * as tuple.__new__ makes them, the parameters converted by the dialect's own function.
 */

enum { NEW_ORDER, PAYMENT, ORDER_STATUS, DELIVERY, STOCK_LEVEL, KINDS };

/* The constants the draws use, in the order Drawer takes them (drawer.py). */
enum { DISTRICTS, MIN_LINES, MAX_LINES, ROLLBACK_PERCENT, REMOTE_SUPPLY_PERCENT, UNUSED_ITEM, QUANTITY_LOW,
       QUANTITY_HIGH, PAYMENT_REMOTE_PERCENT, BY_NAME_PERCENT, AMOUNT_LOW, AMOUNT_HIGH, THRESHOLD_LOW,
       THRESHOLD_HIGH, CARRIER_LOW, CARRIER_HIGH, CONSTANTS };

typedef struct {
    PyObject *name;         /* as the mix deals it */
    PyObject *transaction;  /* what each input is paired with */
    PyObject *input_type;   /* the transaction's input, a named tuple */
    PyObject *sql;          /* its call, in server-side mode; else None */
} Kind;

typedef struct {
    PyObject_HEAD
    int ready;  /* __init__ succeeded, once: a Drawer is never changed afterwards */
    PyObject *random, *last_names, *call_type, *convert;  /* call_type, convert: None in client-side mode */
    Kind kinds[KINDS];
    long w_id, d_id, warehouses;
    long customer[4], item[4], last_name[4];  /* NURand as (A + 1, x, y - x + 1, C) */
    long constant[CONSTANTS];
} Drawer;

static int uniform(Drawer *d, long low, long high, long *out) {
    if (draw_below(d->random, high - low + 1, out) < 0) return -1;
    *out += low;
    return 0;
}

static int nurand(Drawer *d, const long spans[4], long *out) {
    long a, b;
    if (draw_below(d->random, spans[0], &a) < 0 || draw_below(d->random, spans[2], &b) < 0) return -1;
    *out = (((a | (spans[1] + b)) + spans[3]) % spans[2]) + spans[1];
    return 0;
}

/* TpccRandom.other_warehouse */
static int other_warehouse(Drawer *d, long *out) {
    if (uniform(d, 1, d->warehouses - 1, out) < 0) return -1;
    if (*out >= d->w_id) *out += 1;
    return 0;
}

/* (c_id, c_last): by last name (None, a name) or by number (an id, None), as Payment and Order-Status draw. */
static int customer(Drawer *d, long by_name, PyObject **c_id, PyObject **c_last) {
    long value;
    if (by_name) {
        if (nurand(d, d->last_name, &value) < 0) return -1;
        *c_id = Py_NewRef(Py_None);
        *c_last = PySequence_GetItem(d->last_names, value);
    } else {
        if (nurand(d, d->customer, &value) < 0) return -1;
        *c_id = PyLong_FromLong(value);
        *c_last = Py_NewRef(Py_None);
    }
    return *c_id == NULL || *c_last == NULL ? -1 : 0;
}

/* A named tuple of `type` holding `items` (a tuple, stolen), as tuple.__new__(type, items) makes it. */
static PyObject *named(PyObject *type, PyObject *items) {
    if (items == NULL) return NULL;
    PyObject *args = PyTuple_Pack(1, items);
    Py_DECREF(items);
    if (args == NULL) return NULL;
    PyObject *tuple = PyTuple_Type.tp_new((PyTypeObject *)type, args, NULL);
    Py_DECREF(args);
    return tuple;
}

static PyObject *new_order(Drawer *d, PyObject **params) {
    long count, rollback, d_id, c_id;
    const long *c = d->constant;
    long quantity[2] = {c[QUANTITY_LOW], c[QUANTITY_HIGH] - c[QUANTITY_LOW] + 1};
    if (uniform(d, c[MIN_LINES], c[MAX_LINES], &count) < 0 || uniform(d, 1, 100, &rollback) < 0) return NULL;
    PyObject *items = PyList_New(0), *supplies = PyList_New(0), *quantities = PyList_New(0);
    if (items == NULL || supplies == NULL || quantities == NULL) goto failed;
    for (long n = 0; n < count; n++)
        if (draw_line(d->random, n, count, rollback <= c[ROLLBACK_PERCENT], d->item, d->w_id, d->warehouses,
                      c[REMOTE_SUPPLY_PERCENT], c[UNUSED_ITEM], quantity, items, supplies, quantities) < 0)
            goto failed;
    if (uniform(d, 1, c[DISTRICTS], &d_id) < 0 || nurand(d, d->customer, &c_id) < 0) goto failed;
    *params = Py_BuildValue("(lllNNN)", d->w_id, d_id, c_id, items, supplies, quantities);
    return *params == NULL ? NULL : named(d->kinds[NEW_ORDER].input_type, Py_NewRef(*params));
failed:
    Py_XDECREF(items);
    Py_XDECREF(supplies);
    Py_XDECREF(quantities);
    return NULL;
}

static PyObject *payment(Drawer *d, PyObject **params) {
    long d_id, c_w_id, c_d_id, percent, cents;
    const long *c = d->constant;
    PyObject *c_id = NULL, *c_last = NULL;
    if (uniform(d, 1, c[DISTRICTS], &d_id) < 0) return NULL;
    c_w_id = d->w_id, c_d_id = d_id;
    if (d->warehouses > 1) {
        if (uniform(d, 1, 100, &percent) < 0) return NULL;
        if (percent <= c[PAYMENT_REMOTE_PERCENT] &&
            (other_warehouse(d, &c_w_id) < 0 || uniform(d, 1, c[DISTRICTS], &c_d_id) < 0))
            return NULL;
    }
    if (uniform(d, 1, 100, &percent) < 0 || customer(d, percent <= c[BY_NAME_PERCENT], &c_id, &c_last) < 0 ||
        uniform(d, c[AMOUNT_LOW], c[AMOUNT_HIGH], &cents) < 0)
        goto failed;
    double amount = (double)cents / 100.0;
    PyObject *inputs = named(d->kinds[PAYMENT].input_type,
                             Py_BuildValue("(llllOOd)", d->w_id, d_id, c_w_id, c_d_id, c_id, c_last, amount));
    if (inputs != NULL && d->call_type != Py_None) {  /* the amount as Payment.call sends it: f"{amount:.2f}" */
        char *text = PyOS_double_to_string(amount, 'f', 2, 0, NULL);
        *params = text == NULL ? NULL : Py_BuildValue("(llllOOs)", d->w_id, d_id, c_w_id, c_d_id, c_id, c_last, text);
        PyMem_Free(text);
        if (*params == NULL) Py_CLEAR(inputs);
    }
    Py_DECREF(c_id);
    Py_DECREF(c_last);
    return inputs;
failed:
    Py_XDECREF(c_id);
    Py_XDECREF(c_last);
    return NULL;
}

static PyObject *order_status(Drawer *d, PyObject **params) {
    long d_id, percent;
    PyObject *c_id = NULL, *c_last = NULL;
    if (uniform(d, 1, d->constant[DISTRICTS], &d_id) < 0 || uniform(d, 1, 100, &percent) < 0 ||
        customer(d, percent <= d->constant[BY_NAME_PERCENT], &c_id, &c_last) < 0) {
        Py_XDECREF(c_id);
        Py_XDECREF(c_last);
        return NULL;
    }
    *params = Py_BuildValue("(llNN)", d->w_id, d_id, c_id, c_last);
    return *params == NULL ? NULL : named(d->kinds[ORDER_STATUS].input_type, Py_NewRef(*params));
}

static PyObject *delivery(Drawer *d, PyObject **params) {
    long carrier;
    if (uniform(d, d->constant[CARRIER_LOW], d->constant[CARRIER_HIGH], &carrier) < 0) return NULL;
    *params = Py_BuildValue("(ll)", d->w_id, carrier);
    return *params == NULL ? NULL : named(d->kinds[DELIVERY].input_type, Py_NewRef(*params));
}

static PyObject *stock_level(Drawer *d, PyObject **params) {
    long threshold;
    if (uniform(d, d->constant[THRESHOLD_LOW], d->constant[THRESHOLD_HIGH], &threshold) < 0) return NULL;
    *params = Py_BuildValue("(lll)", d->w_id, d->d_id, threshold);
    return *params == NULL ? NULL : named(d->kinds[STOCK_LEVEL].input_type, Py_NewRef(*params));
}

typedef PyObject *(*DrawFunction)(Drawer *, PyObject **);
static const DrawFunction draw_functions[KINDS] = {new_order, payment, order_status, delivery, stock_level};

static Py_ssize_t kind_of(Drawer *d, PyObject *name) {
    for (Py_ssize_t k = 0; k < KINDS; k++)  /* the deck deals the very strings it was given */
        if (d->kinds[k].name == name) return k;
    for (Py_ssize_t k = 0; k < KINDS; k++) {
        int equal = PyUnicode_Check(name) ? PyUnicode_Compare(d->kinds[k].name, name) : -1;
        if (equal == 0) return k;
        if (PyErr_Occurred()) return -1;
    }
    PyErr_Format(PyExc_KeyError, "%R", name);
    return -1;
}

/* One (transaction, input) pair: in server-side mode the input is Call(inputs, sql, params, converted). */
static PyObject *draw_one(Drawer *d, PyObject *name) {
    Py_ssize_t k = kind_of(d, name);
    if (k < 0) return NULL;
    PyObject *params = NULL, *inputs = draw_functions[k](d, &params), *drawn = inputs;
    if (inputs != NULL && d->call_type != Py_None) {
        PyObject *converted = PyObject_CallOneArg(d->convert, params);
        drawn = converted == NULL ? NULL
            : named(d->call_type, PyTuple_Pack(4, inputs, d->kinds[k].sql, params, converted));
        Py_XDECREF(converted);
        Py_DECREF(inputs);
    }
    Py_XDECREF(params);
    if (drawn == NULL) return NULL;
    PyObject *pair = PyTuple_Pack(2, d->kinds[k].transaction, drawn);
    Py_DECREF(drawn);
    return pair;
}

static PyObject *Drawer_draw(Drawer *d, PyObject *names) {
    if (!d->ready) {
        PyErr_SetString(PyExc_RuntimeError, "Drawer: not set up (its __init__ did not succeed)");
        return NULL;
    }
    PyObject *sequence = PySequence_Tuple(names);  /* held whatever the dialect's convert does meanwhile */
    if (sequence == NULL) return NULL;
    Py_ssize_t count = PyTuple_GET_SIZE(sequence);
    PyObject *batch = PyList_New(count);
    for (Py_ssize_t n = 0; batch != NULL && n < count; n++) {
        PyObject *pair = draw_one(d, PyTuple_GET_ITEM(sequence, n));
        if (pair == NULL) Py_CLEAR(batch);
        else PyList_SET_ITEM(batch, n, pair);
    }
    Py_DECREF(sequence);
    return batch;
}

static int parse_longs(PyObject *sequence, long *out, Py_ssize_t count, const char *what) {
    PyObject *fast = PySequence_Fast(sequence, what);
    if (fast == NULL) return -1;
    int failed = PySequence_Fast_GET_SIZE(fast) != count;
    if (failed) PyErr_Format(PyExc_ValueError, "Drawer: %s must hold %zd numbers", what, count);
    for (Py_ssize_t n = 0; !failed && n < count; n++) {
        out[n] = PyLong_AsLong(PySequence_Fast_GET_ITEM(fast, n));
        if (out[n] == -1 && PyErr_Occurred()) failed = 1;
        else if (out[n] < 0 || out[n] > INT_MAX) {  /* bounded, no arithmetic below can overflow a long */
            PyErr_Format(PyExc_ValueError, "Drawer: every number of %s must be in 0..2**31-1", what);
            failed = 1;
        }
    }
    Py_DECREF(fast);
    return failed ? -1 : 0;
}

static int Drawer_traverse(Drawer *d, visitproc visit, void *arg) {
    Py_VISIT(d->random);
    Py_VISIT(d->last_names);
    Py_VISIT(d->call_type);
    Py_VISIT(d->convert);
    for (int k = 0; k < KINDS; k++) {
        Py_VISIT(d->kinds[k].name);
        Py_VISIT(d->kinds[k].transaction);
        Py_VISIT(d->kinds[k].input_type);
        Py_VISIT(d->kinds[k].sql);
    }
    return 0;
}

static int Drawer_clear(Drawer *d) {
    d->ready = 0;
    Py_CLEAR(d->random);
    Py_CLEAR(d->last_names);
    Py_CLEAR(d->call_type);
    Py_CLEAR(d->convert);
    for (int k = 0; k < KINDS; k++) {
        Py_CLEAR(d->kinds[k].name);
        Py_CLEAR(d->kinds[k].transaction);
        Py_CLEAR(d->kinds[k].input_type);
        Py_CLEAR(d->kinds[k].sql);
    }
    return 0;
}

static int is_named_tuple_type(PyObject *type) {
    return PyType_Check(type) && PyType_IsSubtype((PyTypeObject *)type, &PyTuple_Type);
}

/* Everything is checked before anything is kept: a Drawer is set up whole, once, or not at all. */
static int Drawer_init(Drawer *d, PyObject *args, PyObject *kwargs) {
    PyObject *random, *home, *nurand_spans, *last_names, *constants, *kinds, *call_type, *convert;
    static char *keywords[] = {"random", "home", "nurand", "last_names", "constants", "kinds", "call_type",
                               "convert", NULL};
    if (d->ready) {
        PyErr_SetString(PyExc_RuntimeError, "Drawer: already set up");
        return -1;
    }
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOOOO:Drawer", keywords, &random, &home, &nurand_spans,
                                     &last_names, &constants, &kinds, &call_type, &convert))
        return -1;
    long home_numbers[3], spans[12], constant[CONSTANTS];
    if (parse_longs(home, home_numbers, 3, "home (w_id, d_id, warehouses)") < 0 ||
        parse_longs(nurand_spans, spans, 12, "nurand (customer, item, last name spans)") < 0 ||
        parse_longs(constants, constant, CONSTANTS, "constants") < 0)
        return -1;
    if (spans[0] == 0 || spans[2] == 0 || spans[4] == 0 || spans[6] == 0 || spans[8] == 0 || spans[10] == 0 ||
        home_numbers[2] == 0) {
        PyErr_SetString(PyExc_ValueError, "Drawer: every span and the number of warehouses must be positive");
        return -1;
    }
    if (!PyTuple_Check(kinds) || PyTuple_GET_SIZE(kinds) != KINDS) {
        PyErr_SetString(PyExc_ValueError, "Drawer: kinds must be a tuple of five (name, transaction, input type, "
                                          "sql) in the order New-Order, Payment, Order-Status, Delivery, Stock-Level");
        return -1;
    }
    Kind parsed[KINDS];  /* borrowed */
    for (int k = 0; k < KINDS; k++) {
        Kind *kind = &parsed[k];
        if (!PyArg_ParseTuple(PyTuple_GET_ITEM(kinds, k), "UOOO", &kind->name, &kind->transaction,
                              &kind->input_type, &kind->sql))
            return -1;
        if (!is_named_tuple_type(kind->input_type)) {
            PyErr_SetString(PyExc_TypeError, "Drawer: an input type must be a named tuple");
            return -1;
        }
    }
    if (call_type != Py_None && !is_named_tuple_type(call_type)) {
        PyErr_SetString(PyExc_TypeError, "Drawer: call_type must be a named tuple, or None");
        return -1;
    }
    for (int n = 0; n < 4; n++)
        d->customer[n] = spans[n], d->item[n] = spans[4 + n], d->last_name[n] = spans[8 + n];
    memcpy(d->constant, constant, sizeof constant);
    d->w_id = home_numbers[0], d->d_id = home_numbers[1], d->warehouses = home_numbers[2];
    for (int k = 0; k < KINDS; k++)
        d->kinds[k] = (Kind){Py_NewRef(parsed[k].name), Py_NewRef(parsed[k].transaction),
                             Py_NewRef(parsed[k].input_type), Py_NewRef(parsed[k].sql)};
    d->random = Py_NewRef(random), d->last_names = Py_NewRef(last_names);
    d->call_type = Py_NewRef(call_type), d->convert = Py_NewRef(convert);
    d->ready = 1;
    return 0;
}

static void Drawer_dealloc(Drawer *d) {
    PyObject_GC_UnTrack(d);
    Drawer_clear(d);
    Py_TYPE(d)->tp_free((PyObject *)d);
}

static PyMethodDef Drawer_methods[] = {
    {"draw", (PyCFunction)Drawer_draw, METH_O, "draw(names) -> [(transaction, input), ...], one per name"},
    {NULL, NULL, 0, NULL},
};

static PyTypeObject DrawerType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "maximus.workloads.tpcc._draws.Drawer",
    .tp_basicsize = sizeof(Drawer),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC,
    .tp_doc = "A terminal's TPC-C inputs drawn in C, a batch at a time (drawer.py)",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Drawer_init,
    .tp_dealloc = (destructor)Drawer_dealloc,
    .tp_traverse = (traverseproc)Drawer_traverse,
    .tp_clear = (inquiry)Drawer_clear,
    .tp_methods = Drawer_methods,
};

static PyMethodDef methods[] = {
    {"order_lines", order_lines, METH_VARARGS,
     "order_lines(random, count, rollback, (a_span, x, span, c), w_id, warehouses, remote_percent, unused_item,\n"
     "            (quantity_low, quantity_span)) -> (item ids, supply warehouses, quantities)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_draws", "TPC-C inputs drawn in C from the terminal's stream.", -1, methods,
};

PyMODINIT_FUNC PyInit__draws(void) {
    if (PyType_Ready(&DrawerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m != NULL && PyModule_AddObjectRef(m, "Drawer", (PyObject *)&DrawerType) < 0) Py_CLEAR(m);
    return m;
}
