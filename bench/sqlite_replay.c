/* SQLite without Maximus: replays the statements a Maximus run executed (bench/sqlite_tpcc.py records them and
 * writes them as a script), in one process, as a lean C client would: each distinct statement prepared once, its
 * parameters bound, its rows stepped through and every column read. Linked against the system's libsqlite3, the
 * library Python's sqlite3 module uses, and run with the same pragmas.
 *
 *     sqlite_replay DATABASE SCRIPT [PRAGMA ...]
 *
 * The script is read into memory before anything runs, so the timing holds SQLite's work and this loop only. It
 * is made of lines (a text parameter's bytes follow its line, their length given):
 *
 *     S <id> <length>\n<sql>\n    a statement's text, given before its first use
 *     W\n                         the measured window starts here: the clocks start
 *     T\n                         a transaction starts (counted once the window has started)
 *     X <id> <count>\n            execute statement <id> with <count> parameters, each on its own line:
 *       i <integer>\n | r <real>\n | n\n | t <length>\n<bytes>\n
 *
 * It prints one line: transactions=<n> seconds=<wall> cpu_seconds=<user+system>, over the window. */

#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

enum { OP_WINDOW, OP_TRANSACTION, OP_EXECUTE };

typedef struct {
    char kind;     /* 'i', 'r', 'n' or 't' */
    long long integer;
    double real;
    char *text;
    int length;
} Param;

typedef struct {
    int op;
    int statement;
    int count;
    Param *params;
} Op;

typedef struct {
    char *sql;
    int length;
    sqlite3_stmt *prepared;  /* on its first use */
} Statement;

typedef struct {
    Op *ops;
    size_t ops_used, ops_size;
    Statement *statements;
    int statements_size;
} Script;

static void die(const char *what, const char *detail) {
    fprintf(stderr, "sqlite_replay: %s%s%s\n", what, detail ? ": " : "", detail ? detail : "");
    exit(1);
}

static void *grown(void *block, size_t count, size_t size) {
    void *bigger = realloc(block, count * size);
    if (bigger == NULL) die("out of memory", NULL);
    return bigger;
}

static char *read_bytes(FILE *file, int length) {
    char *bytes = grown(NULL, (size_t)length + 1, 1);
    if (fread(bytes, 1, (size_t)length, file) != (size_t)length || fgetc(file) != '\n') die("a cut script", NULL);
    bytes[length] = '\0';
    return bytes;
}

static Op *next_op(Script *script) {
    if (script->ops_used == script->ops_size) {
        script->ops_size = script->ops_size ? 2 * script->ops_size : 4096;
        script->ops = grown(script->ops, script->ops_size, sizeof(Op));
    }
    Op *op = &script->ops[script->ops_used++];
    memset(op, 0, sizeof *op);
    return op;
}

static void read_param(FILE *file, Param *param) {
    char line[64];
    if (fgets(line, sizeof line, file) == NULL) die("a cut script", NULL);
    param->kind = line[0];
    switch (line[0]) {
    case 'i': param->integer = strtoll(line + 2, NULL, 10); break;
    case 'r': param->real = strtod(line + 2, NULL); break;
    case 'n': break;
    case 't':
        param->length = atoi(line + 2);
        param->text = read_bytes(file, param->length);
        break;
    default: die("an unknown parameter type in the script", line);
    }
}

static void define(Script *script, int id, int length, FILE *file) {
    if (id < 0) die("a negative statement id", NULL);
    if (id >= script->statements_size) {
        int size = 2 * id + 16;
        script->statements = grown(script->statements, (size_t)size, sizeof(Statement));
        memset(script->statements + script->statements_size, 0,
               (size_t)(size - script->statements_size) * sizeof(Statement));
        script->statements_size = size;
    }
    script->statements[id].sql = read_bytes(file, length);
    script->statements[id].length = length;
}

static void load(Script *script, const char *path) {
    FILE *file = fopen(path, "rb");
    if (file == NULL) die("cannot open the script", path);
    char line[64];
    int id, count, length;
    while (fgets(line, sizeof line, file) != NULL) {
        if (line[0] == 'S' && sscanf(line + 2, "%d %d", &id, &length) == 2) {
            define(script, id, length, file);
        } else if (line[0] == 'W') {
            next_op(script)->op = OP_WINDOW;
        } else if (line[0] == 'T') {
            next_op(script)->op = OP_TRANSACTION;
        } else if (line[0] == 'X' && sscanf(line + 2, "%d %d", &id, &count) == 2) {
            if (id < 0 || id >= script->statements_size || script->statements[id].sql == NULL)
                die("a statement used before its text", line);
            Op *op = next_op(script);
            op->op = OP_EXECUTE;
            op->statement = id;
            op->count = count;
            op->params = count ? grown(NULL, (size_t)count, sizeof(Param)) : NULL;
            for (int n = 0; n < count; n++) read_param(file, &op->params[n]);
        } else {
            die("an unreadable script line", line);
        }
    }
    fclose(file);
}

static void bind(sqlite3 *db, sqlite3_stmt *stmt, const Op *op) {
    for (int n = 0; n < op->count; n++) {
        const Param *param = &op->params[n];
        int rc;
        switch (param->kind) {
        case 'i': rc = sqlite3_bind_int64(stmt, n + 1, param->integer); break;
        case 'r': rc = sqlite3_bind_double(stmt, n + 1, param->real); break;
        case 't': rc = sqlite3_bind_text(stmt, n + 1, param->text, param->length, SQLITE_STATIC); break;
        default: rc = sqlite3_bind_null(stmt, n + 1);
        }
        if (rc != SQLITE_OK) die("a parameter could not be bound", sqlite3_errmsg(db));
    }
}

/* Every column of the row read in the type SQLite stored it in, as a client that uses its results must. */
static long long read_row(sqlite3_stmt *stmt) {
    long long seen = 0;
    int columns = sqlite3_column_count(stmt);
    for (int n = 0; n < columns; n++) {
        switch (sqlite3_column_type(stmt, n)) {
        case SQLITE_INTEGER: seen += sqlite3_column_int64(stmt, n); break;
        case SQLITE_FLOAT: seen += (long long)sqlite3_column_double(stmt, n); break;
        case SQLITE_TEXT: seen += sqlite3_column_bytes(stmt, n) + sqlite3_column_text(stmt, n)[0]; break;
        default: break;
        }
    }
    return seen;
}

static long long execute(sqlite3 *db, Statement *statement, const Op *op) {
    if (statement->prepared == NULL &&
        sqlite3_prepare_v2(db, statement->sql, statement->length, &statement->prepared, NULL) != SQLITE_OK)
        die("a statement could not be prepared", sqlite3_errmsg(db));
    sqlite3_stmt *stmt = statement->prepared;
    bind(db, stmt, op);
    long long seen = 0;
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) seen += read_row(stmt);
    if (rc != SQLITE_DONE) {
        fprintf(stderr, "sqlite_replay: %s\n  in: %s\n", sqlite3_errmsg(db), statement->sql);
        exit(1);
    }
    sqlite3_reset(stmt);
    return seen;
}

static double seconds_now(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + now.tv_nsec / 1e9;
}

static double cpu_seconds(void) {
    struct rusage usage;
    getrusage(RUSAGE_SELF, &usage);
    return (double)(usage.ru_utime.tv_sec + usage.ru_stime.tv_sec) +
           (usage.ru_utime.tv_usec + usage.ru_stime.tv_usec) / 1e6;
}

int main(int argc, char **argv) {
    if (argc < 3) die("usage: sqlite_replay DATABASE SCRIPT [PRAGMA ...]", NULL);
    Script script = {0};
    load(&script, argv[2]);
    sqlite3 *db;
    if (sqlite3_open_v2(argv[1], &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK)
        die("cannot open the database", sqlite3_errmsg(db));
    for (int n = 3; n < argc; n++)
        if (sqlite3_exec(db, argv[n], NULL, NULL, NULL) != SQLITE_OK) die(argv[n], sqlite3_errmsg(db));
    long long transactions = 0, seen = 0;
    int timing = 0;
    double started = seconds_now(), cpu_started = cpu_seconds();
    for (size_t n = 0; n < script.ops_used; n++) {
        const Op *op = &script.ops[n];
        if (op->op == OP_WINDOW) {
            timing = 1;
            started = seconds_now();
            cpu_started = cpu_seconds();
        } else if (op->op == OP_TRANSACTION) {
            transactions += timing;
        } else {
            seen += execute(db, &script.statements[op->statement], op);
        }
    }
    double elapsed = seconds_now() - started, cpu = cpu_seconds() - cpu_started;
    for (int n = 0; n < script.statements_size; n++) sqlite3_finalize(script.statements[n].prepared);
    if (sqlite3_close(db) != SQLITE_OK) die("cannot close the database", NULL);
    printf("transactions=%lld seconds=%.6f cpu_seconds=%.6f checksum=%lld\n", transactions, elapsed, cpu, seen);
    return 0;
}
