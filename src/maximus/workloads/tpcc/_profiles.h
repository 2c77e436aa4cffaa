/* What the transaction profiles (_profiles.c) ask of a statement backend, and what every backend shares.
 *
 * A backend runs the statements of one connection of a client library (_profiles_sqlite.h: SQLite's,
 * _profiles_libpq.h: libpq's, _profiles_mariadb.h: libmariadb's): it prepares a statement once by its slot, queues
 * statements with their parameters, and gives the results of what was queued, each statement's rows, once ``send``
 * returns. SQLite's runs each statement as it is queued; libpq's sends the queued statements in one pipeline (one
 * round trip) and reads their results; libmariadb's sends them as one multi-statement query. A profile queues a
 * batch (the statements the Python transaction gives ``Session.batch`` at once), sends it, reads its results, then
 * starts the next: so a profile costs the round trips of its Python reference, no more.
 *
 * Money is as the dialect keeps it (schema.money_in_cents): SQLite integer cents, PostgreSQL NUMERIC, MariaDB
 * DECIMAL, given and read here in integer cents. The library's functions are those of the library the Python driver
 * loaded, their addresses given by Python (native.py), so no library headers are needed to build this. */
#ifndef MAXIMUS_PROFILES_H
#define MAXIMUS_PROFILES_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LINES 15       /* 2.4.1.3: 5..15 order lines */
#define DISTRICTS 10
#define FIXED 23           /* the statements of fixed text (_profiles.c's FIXED_NAMES) */
#define SET_KINDS 4        /* a New-Order's statements over a set of rows, one per kind, district and count */
#define STATEMENTS (FIXED + SET_KINDS * (DISTRICTS + 1) * (MAX_LINES + 1))
#define MAX_QUEUED 48      /* statements in one batch: a Delivery's second has 4 per district */

enum { PARAM_INT, PARAM_MONEY, PARAM_TEXT };

typedef struct {
    int kind;
    long long value;       /* PARAM_INT; PARAM_MONEY in cents */
    const char *text;      /* PARAM_TEXT, copied or bound at once: the caller's buffer may go */
} Param;

/* A part of a statement a dialect writes as several (a Split: workloads/statements.py, native.py's form of it): its
 * text, for each of its placeholders the logical statement's parameter it takes, and whether its rows are (some of)
 * the logical statement's. */
typedef struct {
    const char *sql;
    Py_ssize_t length;
    const int *takes;
    int take_count;
    int returns;
} SplitPart;

/* A backend: functions over its own state (``size`` bytes, zeroed, made by ``init``). ``k`` is a statement's place
 * in the last batch sent; every function that fails returns -1 (NULL) with a Python exception set. */
typedef struct {
    const char *library;   /* the start of the library's file name, as Session.library_handle gives it */
    Py_ssize_t functions;  /* how many function addresses ``init`` takes */
    size_t size;
    int (*init)(void *state, uintptr_t handle, void **functions, PyObject *load);
    int (*prepare)(void *state, int slot, const char *sql, Py_ssize_t length);
    int (*queue)(void *state, int slot, const Param *params, int count);
    /* The queued statements' results ready: ``begin`` (bytes, or NULL) sent before them, COMMIT after them with
     * ``commit``. */
    int (*send)(void *state, PyObject *begin, int commit);
    void (*clear)(void *state);  /* forget the results and what was queued */
    int (*rows)(void *state, int k);
    int (*columns)(void *state, int k);
    int (*is_null)(void *state, int k, int row, int column);
    long long (*integer)(void *state, int k, int row, int column);
    long long (*cents)(void *state, int k, int row, int column);
    const char *(*text)(void *state, int k, int row, int column, int *length);
    PyObject *(*value)(void *state, int k, int row, int column);  /* as the Python driver reads it */
    void (*release)(void *state);
    /* A Split prepared in a slot (NULL: the backend's dialect writes none); queued and read as one statement, its
     * rows those of its returning parts. */
    int (*prepare_split)(void *state, int slot, const SplitPart *parts, int count);
} Backend;

/* A statement failed: (the library's code for it, its message), which native.py makes the driver's exception. */
static PyObject *Error;

/* The array at ``*items_at`` (of ``size`` bytes an item) with room for ``needed`` items, doubled as it grows: 0, or -1
 * with the error set. */
static int grow(void *items_at, Py_ssize_t *capacity, Py_ssize_t needed, size_t size) {
    if (needed <= *capacity) return 0;
    Py_ssize_t room = *capacity ? *capacity : 64;
    while (room < needed) room *= 2;
    void *items;
    memcpy(&items, items_at, sizeof items);
    void *moved = PyMem_Realloc(items, (size_t)room * size);
    if (moved == NULL) return PyErr_NoMemory(), -1;
    memcpy(items_at, &moved, sizeof moved);
    *capacity = room;
    return 0;
}

/* Text kept by a backend as it goes: grown as needed, offsets (not pointers) kept, since it moves when it grows. */
typedef struct {
    char *data;
    Py_ssize_t size, capacity;
} Arena;

static Py_ssize_t arena_add(Arena *arena, const char *text, Py_ssize_t length) {
    if (grow(&arena->data, &arena->capacity, arena->size + length + 1, 1) < 0) return -1;
    Py_ssize_t at = arena->size;
    if (length) memcpy(arena->data + at, text, (size_t)length);
    arena->data[at + length] = '\0';
    arena->size += length + 1;
    return at;
}

/* An integer's decimal digits, as printf's %lld writes them (a pipeline of a New-Order carries about 250). */
static int int_text(long long value, char out[24]) {
    char digits[24];
    unsigned long long magnitude = value < 0 ? 0ULL - (unsigned long long)value : (unsigned long long)value;
    int count = 0, length = 0;
    do {
        digits[count++] = (char)('0' + magnitude % 10);
        magnitude /= 10;
    } while (magnitude);
    if (value < 0) out[length++] = '-';
    while (count) out[length++] = digits[--count];
    out[length] = '\0';
    return length;
}

/* Cents as a NUMERIC's text: 1705 as "17.05", as str() writes money(1705). */
static int money_text(long long cents, char out[32]) {
    unsigned long long magnitude = cents < 0 ? 0ULL - (unsigned long long)cents : (unsigned long long)cents;
    return snprintf(out, 32, "%s%llu.%02llu", cents < 0 ? "-" : "", magnitude / 100, magnitude % 100);
}

/* A NUMERIC's text in cents, digits after the second decimal dropped (as int(Decimal(text).scaleb(2))). */
static long long text_cents(const char *text) {
    int negative = *text == '-';
    if (*text == '-' || *text == '+') text++;
    long long cents = 0;
    while (*text >= '0' && *text <= '9') cents = cents * 10 + (*text++ - '0');
    cents *= 100;
    if (*text == '.') {
        text++;
        for (int scale = 10; scale >= 1; scale /= 10) {
            if (*text < '0' || *text > '9') break;
            cents += scale * (*text++ - '0');
        }
    }
    return negative ? -cents : cents;
}

#endif
