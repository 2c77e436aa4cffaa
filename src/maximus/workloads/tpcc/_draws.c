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

/* int(random() * span) in Python: the product in double precision, truncated toward zero. */
static int draw_below(PyObject *random, long span, long *out) {
    PyObject *value = PyObject_CallNoArgs(random);
    if (value == NULL) return -1;
    double r = PyFloat_AsDouble(value);
    if (!(r >= 0.0 && r < 1.0)) {  /* random.Random's always is; anything else might not convert to a long */
        if (!PyErr_Occurred())
            PyErr_Format(PyExc_ValueError, "order_lines: random() returned %R, not a number in [0, 1)", value);
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

static PyMethodDef methods[] = {
    {"order_lines", order_lines, METH_VARARGS,
     "order_lines(random, count, rollback, (a_span, x, span, c), w_id, warehouses, remote_percent, unused_item,\n"
     "            (quantity_low, quantity_span)) -> (item ids, supply warehouses, quantities)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_draws", "A New-Order's order lines drawn in C from the terminal's stream.", -1, methods,
};

PyMODINIT_FUNC PyInit__draws(void) { return PyModule_Create(&module); }
