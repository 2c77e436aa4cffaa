/* The profiles' statement backend on a SQLite connection (_profiles.h): each statement runs as it is queued, its
 * rows copied out (a statement is reset before the next runs), so ``send`` has nothing left to do; BEGIN and
 * COMMIT are the session's own. The connection is the Python session's (its sqlite3 *), the functions those of
 * the libsqlite3 Python's sqlite3 module loaded, in the order of SqliteLibrary (native.py's list). */
#include "_profiles.h"

typedef struct sqlite3 sqlite3;
typedef struct sqlite3_stmt sqlite3_stmt;

enum { SQLITE_OK = 0, SQLITE_ROW = 100, SQLITE_DONE = 101 };
enum { SQLITE_INTEGER = 1, SQLITE_FLOAT = 2, SQLITE_TEXT = 3, SQLITE_BLOB = 4, SQLITE_NULL = 5 };
#define SQLITE_TRANSIENT ((void (*)(void *))-1)

typedef struct {
    int (*prepare_v2)(sqlite3 *, const char *, int, sqlite3_stmt **, const char **);
    int (*step)(sqlite3_stmt *);
    int (*reset)(sqlite3_stmt *);
    int (*finalize)(sqlite3_stmt *);
    int (*bind_int64)(sqlite3_stmt *, int, long long);
    int (*bind_text)(sqlite3_stmt *, int, const char *, int, void (*)(void *));
    int (*bind_null)(sqlite3_stmt *, int);
    int (*column_count)(sqlite3_stmt *);
    int (*column_type)(sqlite3_stmt *, int);
    long long (*column_int64)(sqlite3_stmt *, int);
    double (*column_double)(sqlite3_stmt *, int);
    const unsigned char *(*column_text)(sqlite3_stmt *, int);
    const void *(*column_blob)(sqlite3_stmt *, int);
    int (*column_bytes)(sqlite3_stmt *, int);
    int (*extended_errcode)(sqlite3 *);
    const char *(*errmsg)(sqlite3 *);
} SqliteLibrary;

typedef struct {   /* one column of a row, copied out */
    int type;
    long long integer;
    double real;
    Py_ssize_t at;   /* text or blob: its place in the arena */
    int length;
} Cell;

typedef struct {
    SqliteLibrary lib;
    sqlite3 *db;
    sqlite3_stmt *statements[STATEMENTS];
    struct { int first, rows, columns; } results[MAX_QUEUED];
    int count;
    Cell *cells;
    int cell_count;
    Py_ssize_t cell_capacity;
    Arena arena;
} Sqlite;

static int sqlite_failed(Sqlite *s, sqlite3_stmt *stmt) {
    PyObject *args = Py_BuildValue("(is)", s->lib.extended_errcode(s->db), s->lib.errmsg(s->db));
    if (stmt != NULL) s->lib.reset(stmt);
    if (args != NULL) {
        PyErr_SetObject(Error, args);
        Py_DECREF(args);
    }
    return -1;
}

static int sqlite_init(void *state, uintptr_t handle, void **functions, PyObject *load) {
    Sqlite *s = state;
    (void)load;
    memcpy(&s->lib, functions, sizeof s->lib);
    s->db = (sqlite3 *)handle;
    return 0;
}

static int sqlite_prepare(void *state, int slot, const char *sql, Py_ssize_t length) {
    Sqlite *s = state;
    if (s->lib.prepare_v2(s->db, sql, (int)length, &s->statements[slot], NULL) != SQLITE_OK ||
        s->statements[slot] == NULL)
        return sqlite_failed(s, NULL);
    return 0;
}

static int sqlite_bind(Sqlite *s, sqlite3_stmt *stmt, const Param *params, int count) {
    for (int n = 0; n < count; n++) {
        int rc = params[n].kind == PARAM_TEXT
                     ? s->lib.bind_text(stmt, n + 1, params[n].text, -1, SQLITE_TRANSIENT)
                     : s->lib.bind_int64(stmt, n + 1, params[n].value);  /* money: integer cents */
        if (rc != SQLITE_OK) return -1;
    }
    return 0;
}

static int sqlite_copy_row(Sqlite *s, sqlite3_stmt *stmt, int columns) {
    if (grow(&s->cells, &s->cell_capacity, s->cell_count + columns, sizeof(Cell)) < 0) return -1;
    for (int n = 0; n < columns; n++) {
        Cell *cell = &s->cells[s->cell_count++];
        cell->type = s->lib.column_type(stmt, n);
        if (cell->type == SQLITE_INTEGER) cell->integer = s->lib.column_int64(stmt, n);
        else if (cell->type == SQLITE_FLOAT) cell->real = s->lib.column_double(stmt, n);
        else if (cell->type == SQLITE_TEXT || cell->type == SQLITE_BLOB) {
            const char *data = cell->type == SQLITE_TEXT ? (const char *)s->lib.column_text(stmt, n)
                                                         : (const char *)s->lib.column_blob(stmt, n);
            cell->length = s->lib.column_bytes(stmt, n);
            if (data == NULL && cell->length > 0) return PyErr_NoMemory(), -1;
            if ((cell->at = arena_add(&s->arena, data ? data : "", cell->length)) < 0) return -1;
        }
    }
    return 0;
}

/* Run the statement at once, its rows copied out. */
static int sqlite_queue(void *state, int slot, const Param *params, int count) {
    Sqlite *s = state;
    sqlite3_stmt *stmt = s->statements[slot];
    if (sqlite_bind(s, stmt, params, count) < 0) return sqlite_failed(s, stmt);
    int columns = s->lib.column_count(stmt), rows = 0, first = s->cell_count, rc;
    while ((rc = s->lib.step(stmt)) == SQLITE_ROW) {
        if (sqlite_copy_row(s, stmt, columns) < 0) return s->lib.reset(stmt), -1;
        rows++;
    }
    if (rc != SQLITE_DONE) return sqlite_failed(s, stmt);
    s->lib.reset(stmt);
    s->results[s->count].first = first;
    s->results[s->count].rows = rows;
    s->results[s->count].columns = columns;
    s->count++;
    return 0;
}

static int sqlite_send(void *state, PyObject *begin, int commit) {
    (void)state, (void)begin, (void)commit;  /* run as queued; the session began the transaction, and ends it */
    return 0;
}

static void sqlite_clear(void *state) {
    Sqlite *s = state;
    s->count = s->cell_count = 0;
    s->arena.size = 0;
}

static const Cell *sqlite_cell(Sqlite *s, int k, int row, int column) {
    return &s->cells[s->results[k].first + row * s->results[k].columns + column];
}

static int sqlite_rows(void *state, int k) {
    return ((Sqlite *)state)->results[k].rows;
}

static int sqlite_columns(void *state, int k) {
    return ((Sqlite *)state)->results[k].columns;
}

static int sqlite_is_null(void *state, int k, int row, int column) {
    return sqlite_cell(state, k, row, column)->type == SQLITE_NULL;
}

static long long sqlite_integer(void *state, int k, int row, int column) {
    Sqlite *s = state;
    const Cell *cell = sqlite_cell(s, k, row, column);
    if (cell->type == SQLITE_INTEGER) return cell->integer;
    if (cell->type == SQLITE_FLOAT) return (long long)cell->real;
    if (cell->type == SQLITE_TEXT) return strtoll(s->arena.data + cell->at, NULL, 10);
    return 0;
}

static const char *sqlite_text(void *state, int k, int row, int column, int *length) {
    Sqlite *s = state;
    const Cell *cell = sqlite_cell(s, k, row, column);
    if (cell->type != SQLITE_TEXT && cell->type != SQLITE_BLOB) {
        *length = 0;
        return "";
    }
    *length = cell->length;
    return s->arena.data + cell->at;
}

/* A column as Python's sqlite3 module gives it. */
static PyObject *sqlite_value(void *state, int k, int row, int column) {
    Sqlite *s = state;
    const Cell *cell = sqlite_cell(s, k, row, column);
    switch (cell->type) {
    case SQLITE_INTEGER: return PyLong_FromLongLong(cell->integer);
    case SQLITE_FLOAT: return PyFloat_FromDouble(cell->real);
    case SQLITE_TEXT: return PyUnicode_FromStringAndSize(s->arena.data + cell->at, cell->length);
    case SQLITE_BLOB: return PyBytes_FromStringAndSize(s->arena.data + cell->at, cell->length);
    default: Py_RETURN_NONE;
    }
}

/* The statements are finalized with their object: Python's sqlite3 module closes its connection with
 * sqlite3_close_v2, which waits for them. */
static void sqlite_release(void *state) {
    Sqlite *s = state;
    if (s->lib.finalize != NULL)
        for (int n = 0; n < STATEMENTS; n++) s->lib.finalize(s->statements[n]);
    PyMem_Free(s->cells);
    PyMem_Free(s->arena.data);
}

static const Backend SQLITE_BACKEND = {
    "libsqlite3", sizeof(SqliteLibrary) / sizeof(void (*)(void)), sizeof(Sqlite), sqlite_init, sqlite_prepare,
    sqlite_queue, sqlite_send, sqlite_clear, sqlite_rows, sqlite_columns, sqlite_is_null, sqlite_integer,
    sqlite_integer, sqlite_text, sqlite_value, sqlite_release, NULL,
};
