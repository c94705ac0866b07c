/* Column scanner: turns a slice of Kineto trace events (raw JSON, no brackets) straight into the
 * columns of `stepscope.trace.Trace`, without a Python object per event.
 *
 * This is the compiled fast path of reader.py's `_Builder.add_raw`; the pure-Python path
 * (msgspec records copied into columns) is the reference and reads exactly the same rows.
 *
 * Invariants:
 * - A slice either succeeds or bails. `scan` returns None ("bail") for anything it does not read
 *   exactly like the reference path: invalid JSON, escaped keys, a complete event whose used
 *   fields have unusual types (a string timestamp, a float id, a null name, an int64 overflow),
 *   nesting deeper than MAX_DEPTH. The caller then decodes that slice the reference way, so a bail
 *   never changes what a trace means; it only costs time. A bail leaves no rows behind.
 * - Complete events (`ph` "X" with a timestamp) become rows, but for those whose ts or dur lies
 *   beyond MAX_TIME_US (left out and counted, as the reference does; a negative duration is read
 *   as 0 and counted too), `fwdbwd` flow points rows of the flow
 *   table. Metadata ("M") and `[memory]` instants are handed back as byte spans for the reference
 *   decoder, and so are the flows of a slice where any event that interns a track is handed back
 *   (a `[memory]` event, a flow with an odd id), so tracks are interned in file order; every other
 *   event is only counted by phase, as the reference does.
 * - Ids are assigned in the reference order: `scan` only records each row's strings; `commit`
 *   (called after the caller has handled the handed-back events, which may add tracks) interns
 *   the slice's new names, then tracks, then call stacks, then shapes, each in row order, through
 *   the caller's own interning functions. So ids are identical whichever path read a slice.
 * - Strings are interned by their raw JSON text; the Python string is made once per new text.
 * - `scan` runs without the GIL (so the reader's inflating thread runs alongside); it takes the GIL
 *   back only to call Python for a new category or a rare number, and raises its errors once it
 *   holds the GIL again. One scanner serves one thread at a time.
 * - Built against the stable ABI (3.10+): one binary serves every later CPython.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define MAX_DEPTH 256      /* deeper nesting is left to the reference decoder */
#define MAX_NUMBER_TEXT 64 /* longer number literals are left to the reference decoder */
#define MAX_TIME_US 9007199254740992.0 /* 2**53: model.MAX_TIME_US, the largest |ts| and dur kept */

/* ---------------------------------------------------------------- growable buffers */

typedef struct {
    char *data;
    size_t len, cap; /* in bytes */
} Buf;

/* No Python API here: this runs without the GIL. -1 when out of memory. */
static int buf_grow(Buf *b, size_t extra) {
    size_t need = b->len + extra;
    if (need <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < need)
        cap *= 2;
    char *data = realloc(b->data, cap);
    if (!data)
        return -1;
    b->data = data;
    b->cap = cap;
    return 0;
}

#define BUF_PUSH(b, type, value)                                                                   \
    do {                                                                                           \
        if ((b)->len + sizeof(type) > (b)->cap && buf_grow((b), sizeof(type)) < 0)                 \
            return fail(sc, PyExc_MemoryError, "out of memory");                                   \
        type v__ = (value);                                                                        \
        memcpy((b)->data + (b)->len, &v__, sizeof(type));                                          \
        (b)->len += sizeof(type);                                                                  \
    } while (0)

#define BUF_AT(b, type, i) (((type *)(b)->data)[i])

/* ---------------------------------------------------------------- intern tables */

/* One distinct raw text. `id` is the caller's id (-1 until resolved); for categories it is the kind. */
typedef struct {
    uint64_t hash;
    char *key;
    size_t len;
    int32_t id;
    int escaped; /* the text holds a backslash escape: decode it as JSON */
} Entry;

typedef struct {
    Entry *entries;
    size_t n, cap;
    int32_t *slots; /* entry index + 1; 0 is empty */
    size_t mask;
} Table;

/* Eight bytes a step (a multiply-xorshift mix per word): names are long (paths of Python frames),
 * and byte-at-a-time hashing was the larger part of looking them up. Only the table depends on it:
 * ids are assigned at commit, in row order. */
static uint64_t mix(uint64_t h, uint64_t word) {
    h = (h ^ word) * 0xFF51AFD7ED558CCDULL;
    return h ^ (h >> 32);
}

static uint64_t hash_bytes(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
    for (; n >= 8; s += 8, n -= 8) {
        uint64_t word;
        memcpy(&word, s, 8);
        h = mix(h, word);
    }
    if (n) {
        uint64_t word = 0;
        memcpy(&word, s, n);
        h = mix(h, word);
    }
    h *= 0xC4CEB9FE1A85EC53ULL;
    return h ^ (h >> 29);
}

static void table_free(Table *t) {
    for (size_t i = 0; i < t->n; i++)
        free(t->entries[i].key);
    free(t->entries);
    free(t->slots);
    memset(t, 0, sizeof(*t));
}

static int table_rehash(Table *t, size_t nslots) {
    int32_t *slots = calloc(nslots, sizeof(int32_t));
    if (!slots)
        return -1;
    for (size_t i = 0; i < t->n; i++) {
        size_t j = t->entries[i].hash & (nslots - 1);
        while (slots[j])
            j = (j + 1) & (nslots - 1);
        slots[j] = (int32_t)(i + 1);
    }
    free(t->slots);
    t->slots = slots;
    t->mask = nslots - 1;
    return 0;
}

/* The index of `key`'s entry, added (id -1) when new; -1 when out of memory, -2 when the table is
 * full. No Python API here: this runs without the GIL. */
static Py_ssize_t table_get(Table *t, const char *key, size_t len, int escaped) {
    if (!t->slots && table_rehash(t, 64) < 0)
        return -1;
    uint64_t h = hash_bytes(key, len);
    size_t j = h & t->mask;
    while (t->slots[j]) {
        Entry *e = &t->entries[t->slots[j] - 1];
        if (e->hash == h && e->len == len && memcmp(e->key, key, len) == 0)
            return t->slots[j] - 1;
        j = (j + 1) & t->mask;
    }
    if (t->n >= INT32_MAX - 1)
        return -2;
    if (t->n == t->cap) {
        size_t cap = t->cap ? t->cap * 2 : 64;
        Entry *entries = realloc(t->entries, cap * sizeof(Entry));
        if (!entries)
            return -1;
        t->entries = entries;
        t->cap = cap;
    }
    char *copy = malloc(len ? len : 1);
    if (!copy)
        return -1;
    memcpy(copy, key, len);
    Entry *e = &t->entries[t->n];
    e->hash = h;
    e->key = copy;
    e->len = len;
    e->id = -1;
    e->escaped = escaped;
    t->slots[j] = (int32_t)(t->n + 1);
    t->n++;
    if (t->n * 2 > t->mask + 1 && table_rehash(t, (t->mask + 1) * 2) < 0)
        return -1;
    return (Py_ssize_t)(t->n - 1);
}

/* ---------------------------------------------------------------- the scanner object */

typedef struct {
    PyObject_HEAD
    PyObject *name_id;   /* str -> int: the trace's name id (interning it if new) */
    PyObject *track_id;  /* (pid JSON bytes, tid JSON bytes) -> int: the track id */
    PyObject *shapes_id; /* (dims JSON bytes, types JSON bytes or b"") -> int: the shapes' name id */
    PyObject *kind_of;   /* str -> int: the event family of a category */
    PyObject *loads;     /* bytes -> object: JSON decoding, for escaped strings */
    int cpu_op, memcpy_kind, memset_kind;
    Table names, cats, tracks, shapes, phases;
    /* the current slice: one value per row */
    Buf kind, name_e, track_e, ts, dur, correlation, external_id, sequence, nbytes, stack_e, shape_e;
    size_t rows;
    /* the slice's `fwdbwd` flow points: id, 1 for an end point, track entry, ts, and the span */
    Buf flow_id, flow_end, flow_track_e, flow_ts, flow_span;
    size_t flows;
    int tracks_handed; /* an event handed back interns a track: the flows go back with it */
    int clamp_dur;      /* an absent or negative duration: the reference clamps all to >= 0 */
    int64_t negative_durs;   /* rows whose negative duration is read as 0 */
    int64_t times_out_of_range; /* complete events left out: ts or dur beyond MAX_TIME_US */
    Buf phase_counts;   /* int64 per `phases` entry: events of that phase counted as skipped */
    Buf handed;         /* Py_ssize_t (start, end) pairs: events for the reference decoder */
    int scanned;        /* scan() succeeded and commit() has not run yet */
    int busy;           /* a scan() is running (it releases the GIL: another thread could call) */
    PyThreadState *released; /* while scan() runs without the GIL: the thread state to restore */
    PyObject *fail_type;     /* an error met without the GIL, raised when scan() holds it again */
    const char *fail_message;
} Scanner;

enum { OK = 0, BAIL = 1, ERR = 2 };

static int fail(Scanner *sc, PyObject *type, const char *message) {
    sc->fail_type = type;
    sc->fail_message = message;
    return ERR;
}

/* A table index, or ERR recorded for a failed table_get. */
static int table_failed(Scanner *sc, Py_ssize_t r) {
    return r == -2 ? fail(sc, PyExc_OverflowError, "too many distinct strings in one trace")
                   : fail(sc, PyExc_MemoryError, "out of memory");
}

/* Call Python from the scan: take the GIL back for the call, give it up again after. */
static void hold_gil(Scanner *sc) {
    if (sc->released)
        PyEval_RestoreThread(sc->released);
}

static void drop_gil(Scanner *sc) {
    if (sc->released)
        sc->released = PyEval_SaveThread();
}

/* ---------------------------------------------------------------- JSON scanning */

static unsigned char STRING_STOP[256]; /* '"', '\\' and control characters */
static signed char HEX[256];

static void init_tables(void) {
    for (int c = 0; c < 256; c++) {
        STRING_STOP[c] = (c < 0x20 || c == '"' || c == '\\');
        HEX[c] = (c >= '0' && c <= '9') ? c - '0'
               : (c >= 'a' && c <= 'f') ? c - 'a' + 10
               : (c >= 'A' && c <= 'F') ? c - 'A' + 10 : -1;
    }
}

/* Whether any of 8 bytes is '"', '\\' or a control character (the SWAR tests of "Bit Twiddling
 * Hacks": a byte below n, a zero byte after XOR). */
static inline int has_string_stop(uint64_t x) {
    const uint64_t ones = 0x0101010101010101ULL, highs = 0x8080808080808080ULL;
    uint64_t quote = x ^ (ones * '"'), backslash = x ^ (ones * '\\');
    uint64_t stop = ((x - ones * 0x20) & ~x) | ((quote - ones) & ~quote) | ((backslash - ones) & ~backslash);
    return (stop & highs) != 0;
}

static inline const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
        p++;
    return p;
}

static size_t w_utf8(const unsigned char *s, size_t i, size_t n, int *code);

/* Whether `s` is valid UTF-8 (no overlong forms, surrogates or code points past U+10FFFF), as
 * the reference decoder requires of every string it decodes: w_utf8 (the walker's check, which
 * also says where) finds no bad byte. */
static inline int utf8_valid(const unsigned char *s, size_t n) {
    int code;
    return w_utf8(s, 0, n, &code) == n;
}

/* Whether the \u escapes of a (scanned) string pair their surrogates: a high one (D800-DBFF)
 * followed by a low one (DC00-DFFF), never either alone. */
static int surrogates_paired(const char *s, size_t n) {
    int want_low = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] != '\\')
            goto not_unit;
        i++;
        if (s[i] != 'u')
            goto not_unit;
        unsigned unit = (unsigned)(HEX[(unsigned char)s[i + 1]] << 12 | HEX[(unsigned char)s[i + 2]] << 8 |
                                   HEX[(unsigned char)s[i + 3]] << 4 | HEX[(unsigned char)s[i + 4]]);
        i += 4;
        if (unit >= 0xDC00 && unit <= 0xDFFF) {
            if (!want_low)
                return 0;
            want_low = 0;
        } else {
            if (want_low)
                return 0;
            want_low = unit >= 0xD800 && unit <= 0xDBFF;
        }
        continue;
    not_unit:
        if (want_low)
            return 0;
    }
    return !want_low;
}

/* A JSON string starting at `p` (on its opening quote): the position after its closing quote, or
 * NULL if it is not valid. `content`/`len` are the text between the quotes; `escaped` whether it
 * holds a backslash escape. Every string is checked, used or skipped: valid UTF-8, surrogate
 * escapes in pairs. (The reference checks skipped strings only when some event of the slice sends
 * it to its generic decoding; a string it may refuse is left to it, which is always exact.) */
static const char *scan_string(const char *p, const char *end, const char **content, size_t *len, int *escaped) {
    const char *s = ++p;
    int esc = 0;
    uint64_t high = 0; /* bit 7 of some byte set: not ASCII, check the UTF-8 */
    for (;;) {
        while (end - p >= 8) {
            uint64_t x;
            memcpy(&x, p, 8);
            if (has_string_stop(x))
                break;
            high |= x;
            p += 8;
        }
        while (p < end && !STRING_STOP[(unsigned char)*p])
            high |= (unsigned char)*p++;
        if (p >= end)
            return NULL;
        if (*p == '"')
            break;
        if (*p != '\\')
            return NULL; /* a raw control character */
        esc = 1;
        if (++p >= end)
            return NULL;
        switch (*p) {
        case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't':
            p++;
            break;
        case 'u':
            if (end - p < 5 || HEX[(unsigned char)p[1]] < 0 || HEX[(unsigned char)p[2]] < 0 ||
                HEX[(unsigned char)p[3]] < 0 || HEX[(unsigned char)p[4]] < 0)
                return NULL;
            p += 5;
            break;
        default:
            return NULL;
        }
    }
    if ((high & 0x8080808080808080ULL) && !utf8_valid((const unsigned char *)s, (size_t)(p - s)))
        return NULL;
    if (esc && !surrogates_paired(s, (size_t)(p - s)))
        return NULL;
    *content = s;
    *len = (size_t)(p - s);
    *escaped = esc;
    return p + 1;
}

/* A JSON number at `p`: the position after it, or NULL if it is not valid. `is_int` says it has
 * neither fraction nor exponent. */
static const char *scan_number(const char *p, const char *end, int *is_int) {
    if (p < end && *p == '-')
        p++;
    if (p >= end)
        return NULL;
    if (*p == '0')
        p++;
    else if (*p >= '1' && *p <= '9')
        while (p < end && *p >= '0' && *p <= '9')
            p++;
    else
        return NULL;
    int integer = 1;
    if (p < end && *p == '.') {
        integer = 0;
        p++;
        const char *d = p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p == d)
            return NULL;
    }
    if (p < end && (*p == 'e' || *p == 'E')) {
        integer = 0;
        p++;
        if (p < end && (*p == '+' || *p == '-'))
            p++;
        const char *d = p;
        while (p < end && *p >= '0' && *p <= '9')
            p++;
        if (p == d)
            return NULL;
    }
    *is_int = integer;
    return p;
}

/* An integer literal (as checked by scan_number) to int64; 0 if it does not fit. */
static int parse_int64(const char *s, const char *e, int64_t *out) {
    int neg = (*s == '-');
    if (neg)
        s++;
    uint64_t v = 0;
    for (; s < e; s++) {
        unsigned d = (unsigned)(*s - '0');
        if (v > (UINT64_MAX - d) / 10)
            return 0;
        v = v * 10 + d;
    }
    if (neg) {
        if (v > (uint64_t)INT64_MAX + 1)
            return 0;
        *out = v == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)v;
    } else {
        if (v > (uint64_t)INT64_MAX)
            return 0;
        *out = (int64_t)v;
    }
    return 1;
}

static const double POW10[23] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};

/* A number literal to the double the reference decoder makes; 0 to bail (out of range, too long).
 * Integer literals go through int64 like the reference's int-then-float (so "-0" is 0.0). Other
 * literals whose digits make an integer of at most 2^53 with a power of ten up to 22 are exact
 * after one correctly rounded multiplication or division (Clinger's fast path: Kineto's
 * microsecond timestamps with three decimals all are); the rest go to PyOS_string_to_double,
 * which rounds correctly too. */
static int parse_double(Scanner *sc, const char *s, const char *e, int is_int, double *out) {
    if (is_int) {
        int64_t v;
        if (!parse_int64(s, e, &v))
            return 0;
        *out = (double)v;
        return 1;
    }
    const char *p = s;
    int neg = (*p == '-');
    if (neg)
        p++;
    uint64_t mantissa = 0;
    int digits = 0, exp10 = 0;
    while (p < e && *p >= '0' && *p <= '9') {
        if (digits || *p != '0') {
            if (++digits > 19)
                goto slow;
            mantissa = mantissa * 10 + (uint64_t)(*p - '0');
        }
        p++;
    }
    if (p < e && *p == '.') {
        p++;
        while (p < e && *p >= '0' && *p <= '9') {
            if (digits || *p != '0') {
                if (++digits > 19)
                    goto slow;
                mantissa = mantissa * 10 + (uint64_t)(*p - '0');
            }
            exp10--;
            p++;
        }
    }
    if (p < e) { /* an exponent */
        p++;
        int eneg = 0, ev = 0;
        if (*p == '+' || *p == '-')
            eneg = (*p++ == '-');
        while (p < e) {
            if (ev > 10000)
                goto slow;
            ev = ev * 10 + (*p++ - '0');
        }
        exp10 += eneg ? -ev : ev;
    }
    if (mantissa == 0) {
        *out = neg ? -0.0 : 0.0;
        return 1;
    }
    if (exp10 < -22 || exp10 > 22 || mantissa > (1ULL << 53))
        goto slow;
    double m = (double)mantissa;
    m = exp10 < 0 ? m / POW10[-exp10] : m * POW10[exp10];
    *out = neg ? -m : m;
    return 1;
slow:;
    char text[MAX_NUMBER_TEXT + 1];
    size_t n = (size_t)(e - s);
    if (n > MAX_NUMBER_TEXT)
        return 0;
    memcpy(text, s, n);
    text[n] = '\0';
    hold_gil(sc);
    double v = PyOS_string_to_double(text, NULL, NULL);
    int failed = v == -1.0 && PyErr_Occurred();
    if (failed)
        PyErr_Clear();
    drop_gil(sc);
    if (failed)
        return 0;
    if (!isfinite(v))
        return 0; /* the reference refuses out-of-range numbers */
    *out = v;
    return 1;
}

/* Skip any JSON value at `p`, checking it: the position after it, or NULL if it is invalid or
 * nests deeper than MAX_DEPTH (either way the slice goes to the reference decoder). */
static const char *skip_value(const char *p, const char *end) {
    char stack[MAX_DEPTH]; /* '{' or '[' per open container */
    int depth = 0;
    const char *content;
    size_t len;
    int esc, is_int;
    for (;;) {
        /* a value */
        p = skip_ws(p, end);
        if (p >= end)
            return NULL;
        switch (*p) {
        case '"':
            p = scan_string(p, end, &content, &len, &esc);
            if (!p)
                return NULL;
            break;
        case '{':
        case '[':
            if (depth == MAX_DEPTH)
                return NULL;
            stack[depth++] = *p++;
            p = skip_ws(p, end);
            if (p < end && *p == (stack[depth - 1] == '{' ? '}' : ']')) {
                depth--;
                p++;
                break;
            }
            if (stack[depth - 1] == '{') {
                if (p >= end || *p != '"' || !(p = scan_string(p, end, &content, &len, &esc)))
                    return NULL;
                p = skip_ws(p, end);
                if (p >= end || *p++ != ':')
                    return NULL;
            }
            continue; /* the container's first value */
        case 't':
            if (end - p < 4 || memcmp(p, "true", 4))
                return NULL;
            p += 4;
            break;
        case 'f':
            if (end - p < 5 || memcmp(p, "false", 5))
                return NULL;
            p += 5;
            break;
        case 'n':
            if (end - p < 4 || memcmp(p, "null", 4))
                return NULL;
            p += 4;
            break;
        default:
            p = scan_number(p, end, &is_int);
            if (!p)
                return NULL;
        }
        /* after a value: close containers, or go on to the next member */
        for (;;) {
            if (depth == 0)
                return p;
            p = skip_ws(p, end);
            if (p >= end)
                return NULL;
            char close = stack[depth - 1] == '{' ? '}' : ']';
            if (*p == close) {
                depth--;
                p++;
                continue;
            }
            if (*p != ',')
                return NULL;
            p = skip_ws(p + 1, end);
            if (stack[depth - 1] == '{') {
                if (p >= end || *p != '"' || !(p = scan_string(p, end, &content, &len, &esc)))
                    return NULL;
                p = skip_ws(p, end);
                if (p >= end || *p++ != ':')
                    return NULL;
            }
            break;
        }
    }
}

/* ---------------------------------------------------------------- one event */

enum { ABSENT = 0, IS_NULL, IS_STRING, IS_INT, IS_NUMBER, IS_OTHER };

typedef struct {
    int type;
    const char *s; /* string content, or the value's raw text */
    size_t len;
    int escaped;
    int is_int;
} Value;

typedef struct {
    Value ph, cat, name, pid, tid, ts, dur, id;
    int64_t correlation, external_id, external_id_old, sequence, nbytes, size;
    Value call_stack, input_dims, input_type; /* dims/type: raw text of any value */
    unsigned odd; /* ODD_* bits: integer args the reference would coerce (bail only if a row uses them) */
    int bail;
} Fields;

enum { ODD_CORRELATION = 1, ODD_EXTERNAL_ID = 2, ODD_EXTERNAL_ID_OLD = 4, ODD_SEQUENCE = 8, ODD_BYTES = 16,
       ODD_SIZE = 32 };

static inline int key_is(const char *k, size_t n, const char *lit, size_t litn) {
    return n == litn && memcmp(k, lit, n) == 0;
}
#define KEY(lit) key_is(key, klen, lit, sizeof(lit) - 1)

/* One value of a field we read: its type and text. NULL if the JSON is invalid. */
static const char *read_value(const char *p, const char *end, Value *v) {
    p = skip_ws(p, end);
    if (p >= end)
        return NULL;
    const char *s = p;
    memset(v, 0, sizeof(*v));
    if (*p == '"') {
        p = scan_string(p, end, &v->s, &v->len, &v->escaped);
        v->type = IS_STRING;
        return p;
    }
    if (*p == '-' || (*p >= '0' && *p <= '9')) {
        p = scan_number(p, end, &v->is_int);
        if (!p)
            return NULL;
        v->type = v->is_int ? IS_INT : IS_NUMBER;
    } else if (end - p >= 4 && memcmp(p, "null", 4) == 0) {
        p += 4;
        v->type = IS_NULL;
    } else {
        p = skip_value(p, end);
        if (!p)
            return NULL;
        v->type = IS_OTHER;
    }
    v->s = s;
    v->len = (size_t)(p - s);
    return p;
}

/* An integer field of `args`: null is absent (-1); anything but an int64 literal is odd. */
static void int_field(const Value *v, int64_t *out, unsigned bit, unsigned *odd) {
    *odd &= ~bit; /* a repeated key replaces the earlier value */
    if (v->type == IS_NULL)
        *out = -1; /* the reference's coercion reads null as absent */
    else if (v->type != IS_INT || !parse_int64(v->s, v->s + v->len, out))
        *odd |= bit;
}

/* No args (absent, or a repeated "args" about to replace the earlier one, as in the reference). */
static void clear_args(Fields *f) {
    f->odd = 0;
    f->correlation = f->external_id = f->external_id_old = f->sequence = f->nbytes = f->size = -1;
    memset(&f->call_stack, 0, sizeof(Value));
    memset(&f->input_dims, 0, sizeof(Value));
    memset(&f->input_type, 0, sizeof(Value));
}

/* An object member's key at `p`, up to and past its ':'; NULL if invalid. An escaped key (which
 * the reference matches after unescaping) leaves the slice to the reference. */
static const char *read_key(const char *p, const char *end, const char **key, size_t *klen, Fields *f) {
    int kesc;
    if (p >= end || *p != '"' || !(p = scan_string(p, end, key, klen, &kesc)))
        return NULL;
    if (kesc)
        f->bail = 1;
    p = skip_ws(p, end);
    if (p >= end || *p != ':')
        return NULL;
    return p + 1;
}

/* After a member's value: the next key's position (`*closed` 0), or past the object's '}'
 * (`*closed` 1); NULL if invalid. */
static const char *next_member(const char *p, const char *end, int *closed) {
    p = skip_ws(p, end);
    if (p >= end)
        return NULL;
    *closed = *p == '}';
    if (*closed)
        return p + 1;
    if (*p != ',')
        return NULL;
    return skip_ws(p + 1, end);
}

static const char *read_args(const char *p, const char *end, Fields *f) {
    clear_args(f);
    p = skip_ws(p + 1, end); /* after '{' */
    if (p < end && *p == '}')
        return p + 1;
    for (;;) {
        const char *key;
        size_t klen;
        if (!(p = read_key(p, end, &key, &klen, f)))
            return NULL;
        Value v;
        int64_t *target = NULL;
        unsigned bit = 0;
        if (KEY("correlation"))
            target = &f->correlation, bit = ODD_CORRELATION;
        else if (KEY("External id"))
            target = &f->external_id, bit = ODD_EXTERNAL_ID;
        else if (KEY("external id"))
            target = &f->external_id_old, bit = ODD_EXTERNAL_ID_OLD;
        else if (KEY("Sequence number"))
            target = &f->sequence, bit = ODD_SEQUENCE;
        else if (KEY("bytes"))
            target = &f->nbytes, bit = ODD_BYTES;
        else if (KEY("size"))
            target = &f->size, bit = ODD_SIZE;
        if (target) {
            if (!(p = read_value(p, end, &v)))
                return NULL;
            *target = -1;
            int_field(&v, target, bit, &f->odd);
        } else if (KEY("Call stack")) {
            if (!(p = read_value(p, end, &f->call_stack)))
                return NULL;
        } else if (KEY("Input Dims")) {
            if (!(p = read_value(p, end, &f->input_dims)))
                return NULL;
        } else if (KEY("Input type")) {
            if (!(p = read_value(p, end, &f->input_type)))
                return NULL;
        } else if (!(p = skip_value(p, end))) {
            return NULL;
        }
        int closed;
        if (!(p = next_member(p, end, &closed)) || closed)
            return p;
    }
}

/* The fields of one event object at `p` (on its '{'). */
static const char *read_event(const char *p, const char *end, Fields *f) {
    memset(f, 0, sizeof(*f));
    clear_args(f);
    p = skip_ws(p + 1, end);
    if (p < end && *p == '}')
        return p + 1;
    for (;;) {
        const char *key;
        size_t klen;
        if (!(p = read_key(p, end, &key, &klen, f)))
            return NULL;
        Value *target = NULL;
        switch (klen) {
        case 2:
            if (KEY("ph")) target = &f->ph;
            else if (KEY("ts")) target = &f->ts;
            else if (KEY("id")) target = &f->id;
            break;
        case 3:
            if (KEY("cat")) target = &f->cat;
            else if (KEY("pid")) target = &f->pid;
            else if (KEY("tid")) target = &f->tid;
            else if (KEY("dur")) target = &f->dur;
            break;
        case 4:
            if (KEY("name")) target = &f->name;
            else if (KEY("args")) {
                p = skip_ws(p, end);
                if (p < end && *p == '{') {
                    if (!(p = read_args(p, end, f)))
                        return NULL;
                } else {
                    Value v;
                    if (!(p = read_value(p, end, &v)))
                        return NULL;
                    if (v.type == IS_NULL) {
                        clear_args(f);
                    } else {
                        f->bail = 1; /* args that are not an object: only the reference reads those */
                    }
                }
                goto next;
            }
            break;
        }
        if (target) {
            if (!(p = read_value(p, end, target)))
                return NULL;
        } else if (!(p = skip_value(p, end))) {
            return NULL;
        }
    next:;
        int closed;
        if (!(p = next_member(p, end, &closed)) || closed)
            return p;
    }
}

/* ---------------------------------------------------------------- rows */

static int count_phase(Scanner *sc, const char *ph, size_t len) {
    Py_ssize_t e = table_get(&sc->phases, ph, len, 0);
    if (e < 0)
        return table_failed(sc, e);
    while (sc->phase_counts.len < (size_t)(e + 1) * sizeof(int64_t))
        BUF_PUSH(&sc->phase_counts, int64_t, 0);
    BUF_AT(&sc->phase_counts, int64_t, e)++;
    return OK;
}

static int hand_back(Scanner *sc, const char *start, const char *stop, const char *body) {
    BUF_PUSH(&sc->handed, Py_ssize_t, (Py_ssize_t)(start - body));
    BUF_PUSH(&sc->handed, Py_ssize_t, (Py_ssize_t)(stop - body));
    return OK;
}

static inline int str_is(const Value *v, const char *lit) {
    size_t n = strlen(lit);
    return v->type == IS_STRING && !v->escaped && v->len == n && memcmp(v->s, lit, n) == 0;
}

/* The Python string of a table entry's raw text. */
static PyObject *entry_str(Scanner *sc, const Entry *e) {
    if (!e->escaped)
        return PyUnicode_DecodeUTF8(e->key, (Py_ssize_t)e->len, "strict");
    PyObject *quoted = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)e->len + 2);
    if (!quoted)
        return NULL;
    char *q = PyBytes_AsString(quoted);
    q[0] = '"';
    memcpy(q + 1, e->key, e->len);
    q[e->len + 1] = '"';
    PyObject *s = PyObject_CallFunctionObjArgs(sc->loads, quoted, NULL);
    Py_DECREF(quoted);
    return s;
}

/* The kind of a category (resolved at once: kinds are not ids, so their order does not matter). */
static int category_kind(Scanner *sc, const Value *cat, int8_t *kind) {
    if (cat->type != IS_STRING) {
        *kind = 0; /* absent or null: other */
        return OK;
    }
    Py_ssize_t i = table_get(&sc->cats, cat->s, cat->len, cat->escaped);
    if (i < 0)
        return table_failed(sc, i);
    Entry *e = &sc->cats.entries[i];
    if (e->id < 0) {
        hold_gil(sc); /* errors raised here stay set in this thread's state */
        int r = OK;
        long kv = -1;
        PyObject *s = entry_str(sc, e);
        if (!s) {
            r = ERR;
            if (PyErr_ExceptionMatches(PyExc_ValueError)) { /* not UTF-8, or a bad escape */
                PyErr_Clear();
                r = BAIL;
            }
        } else {
            PyObject *k = PyObject_CallFunctionObjArgs(sc->kind_of, s, NULL);
            Py_DECREF(s);
            kv = k ? PyLong_AsLong(k) : -1;
            Py_XDECREF(k);
            if (kv == -1 && PyErr_Occurred())
                r = ERR;
            else if (kv < -128 || kv > 127) {
                PyErr_SetString(PyExc_ValueError, "an event family outside -128..127");
                r = ERR;
            }
        }
        drop_gil(sc);
        if (r != OK)
            return r;
        e->id = (int32_t)kv;
    }
    *kind = (int8_t)e->id;
    return OK;
}

/* The track entry of an event: its pid and tid as their JSON text (an absent one is the empty
 * string); BAIL for an id the reference coerces (a float, null or object). */
static int track_entry(Scanner *sc, const Fields *f, Py_ssize_t *track) {
    char key[512];
    const Value *ids[2] = {&f->pid, &f->tid};
    size_t klen = 0;
    for (int i = 0; i < 2; i++) {
        const Value *v = ids[i];
        const char *text;
        size_t n;
        if (v->type == ABSENT) {
            text = "\"\"";
            n = 2;
        } else if (v->type == IS_INT) {
            int64_t unused;
            if (!parse_int64(v->s, v->s + v->len, &unused))
                return BAIL;
            text = v->s;
            n = v->len;
        } else if (v->type == IS_STRING) {
            text = v->s - 1; /* with its quotes */
            n = v->len + 2;
        } else {
            return BAIL; /* a float, null or object id: the reference coerces it */
        }
        if (klen + n + 1 > sizeof(key))
            return BAIL;
        memcpy(key + klen, text, n);
        klen += n;
        if (i == 0)
            key[klen++] = '\0';
    }
    *track = table_get(&sc->tracks, key, klen, 0);
    return *track < 0 ? table_failed(sc, *track) : OK;
}

/* Append one complete event as a row; BAIL when a used field has a type only the reference reads. */
static int add_row(Scanner *sc, const Fields *f) {
    if (f->name.type != IS_STRING && f->name.type != ABSENT)
        return BAIL; /* a null or non-string name: the reference coerces it */
    if (f->cat.type != IS_STRING && f->cat.type != IS_NULL && f->cat.type != ABSENT)
        return BAIL;
    if ((f->dur.type != IS_INT && f->dur.type != IS_NUMBER && f->dur.type != IS_NULL && f->dur.type != ABSENT))
        return BAIL;
    if (f->call_stack.type != ABSENT && f->call_stack.type != IS_STRING && f->call_stack.type != IS_NULL)
        return BAIL;
    double ts, dur = 0.0;
    if (!parse_double(sc, f->ts.s, f->ts.s + f->ts.len, f->ts.is_int, &ts))
        return BAIL;
    if (f->dur.type == IS_INT || f->dur.type == IS_NUMBER) {
        if (!parse_double(sc, f->dur.s, f->dur.s + f->dur.len, f->dur.is_int, &dur))
            return BAIL;
    }
    if (!(fabs(ts) <= MAX_TIME_US) || !(dur <= MAX_TIME_US)) {
        sc->times_out_of_range++; /* no time a profiler writes: left out, as the reference does */
        return OK;
    }
    if (f->dur.type != IS_INT && f->dur.type != IS_NUMBER) {
        sc->clamp_dur = 1;
    } else if (dur < 0.0) {
        sc->clamp_dur = 1;
        sc->negative_durs++;
    }
    Py_ssize_t track;
    int r = track_entry(sc, f, &track);
    if (r != OK)
        return r;
    Py_ssize_t name = table_get(&sc->names, f->name.type == IS_STRING ? f->name.s : "",
                                f->name.type == IS_STRING ? f->name.len : 0, f->name.escaped);
    if (name < 0)
        return table_failed(sc, name);
    int8_t kind;
    r = category_kind(sc, &f->cat, &kind);
    if (r != OK)
        return r;
    int cpu_op = kind == sc->cpu_op, copy = kind == sc->memcpy_kind || kind == sc->memset_kind;
    /* an integer arg the reference coerces (a digit string, a float) matters only where it is used */
    unsigned used = ODD_CORRELATION | ODD_EXTERNAL_ID | (f->external_id == -1 ? ODD_EXTERNAL_ID_OLD : 0) |
                    (cpu_op ? ODD_SEQUENCE : 0) | (copy ? ODD_BYTES | (f->nbytes == -1 ? ODD_SIZE : 0) : 0);
    if (f->odd & used)
        return BAIL;
    Py_ssize_t stack = -1, shape = -1;
    if (cpu_op && f->call_stack.type == IS_STRING) {
        stack = table_get(&sc->names, f->call_stack.s, f->call_stack.len, f->call_stack.escaped);
        if (stack < 0)
            return table_failed(sc, stack);
    }
    if (cpu_op && f->input_dims.type != ABSENT) {
        /* the raw texts of dims and types, as the shapes' key */
        size_t n = f->input_dims.len + 1 + (f->input_type.type != ABSENT ? f->input_type.len : 0);
        char small[1024];
        char *buf = n <= sizeof(small) ? small : malloc(n);
        if (!buf)
            return fail(sc, PyExc_MemoryError, "out of memory");
        memcpy(buf, f->input_dims.s, f->input_dims.len);
        buf[f->input_dims.len] = '\0';
        if (f->input_type.type != ABSENT)
            memcpy(buf + f->input_dims.len + 1, f->input_type.s, f->input_type.len);
        shape = table_get(&sc->shapes, buf, n, 0);
        if (buf != small)
            free(buf);
        if (shape < 0)
            return table_failed(sc, shape);
    }
    int64_t nbytes = -1;
    if (copy)
        nbytes = f->nbytes != -1 ? f->nbytes : f->size;
    BUF_PUSH(&sc->kind, int8_t, kind);
    BUF_PUSH(&sc->name_e, int32_t, (int32_t)name);
    BUF_PUSH(&sc->track_e, int32_t, (int32_t)track);
    BUF_PUSH(&sc->ts, double, ts);
    BUF_PUSH(&sc->dur, double, dur);
    BUF_PUSH(&sc->correlation, int64_t, f->correlation);
    BUF_PUSH(&sc->external_id, int64_t, f->external_id != -1 ? f->external_id : f->external_id_old);
    BUF_PUSH(&sc->sequence, int64_t, cpu_op ? f->sequence : -1);
    BUF_PUSH(&sc->nbytes, int64_t, nbytes);
    BUF_PUSH(&sc->stack_e, int32_t, (int32_t)stack);
    BUF_PUSH(&sc->shape_e, int32_t, (int32_t)shape);
    sc->rows++;
    return OK;
}

/* One `fwdbwd` flow point, as the reference keeps it: the id as an integer, dropped (not counted)
 * when negative or absent or without a timestamp; handed back when a value needs its coercion. */
static int add_flow(Scanner *sc, const Fields *f, int is_end, const char *start, const char *stop,
                    const char *body) {
    int64_t id = -1;
    if (f->id.type == IS_INT) {
        if (!parse_int64(f->id.s, f->id.s + f->id.len, &id))
            goto coerced;
    } else if (f->id.type != ABSENT && f->id.type != IS_NULL) {
        goto coerced; /* a string or float id */
    }
    if (f->ts.type != ABSENT && f->ts.type != IS_NULL && f->ts.type != IS_INT && f->ts.type != IS_NUMBER)
        goto coerced;
    if (id < 0 || f->ts.type == ABSENT || f->ts.type == IS_NULL)
        return OK;
    double ts;
    if (!parse_double(sc, f->ts.s, f->ts.s + f->ts.len, f->ts.is_int, &ts))
        goto coerced;
    Py_ssize_t track;
    int r = track_entry(sc, f, &track);
    if (r == BAIL)
        goto coerced;
    if (r != OK)
        return r;
    BUF_PUSH(&sc->flow_id, int64_t, id);
    BUF_PUSH(&sc->flow_end, int8_t, (int8_t)is_end);
    BUF_PUSH(&sc->flow_track_e, int32_t, (int32_t)track);
    BUF_PUSH(&sc->flow_ts, double, ts);
    BUF_PUSH(&sc->flow_span, Py_ssize_t, (Py_ssize_t)(start - body));
    BUF_PUSH(&sc->flow_span, Py_ssize_t, (Py_ssize_t)(stop - body));
    sc->flows++;
    return OK;
coerced:
    sc->tracks_handed = 1;
    return hand_back(sc, start, stop, body);
}

/* One event: a row, a span handed back, or a count. */
static int take_event(Scanner *sc, const Fields *f, const char *start, const char *stop, const char *body) {
    if (f->bail)
        return BAIL;
    const Value *ph = &f->ph;
    if (ph->type == ABSENT || ph->type == IS_NULL)
        return count_phase(sc, "None", 4); /* the reference counts str(None) */
    if (ph->type != IS_STRING || ph->escaped)
        return BAIL;
    if (str_is(ph, "X")) {
        if (f->ts.type == ABSENT || f->ts.type == IS_NULL)
            return count_phase(sc, "X", 1);
        if (f->ts.type != IS_INT && f->ts.type != IS_NUMBER)
            return BAIL;
        return add_row(sc, f);
    }
    if (str_is(ph, "M"))
        return hand_back(sc, start, stop, body);
    if (str_is(ph, "s") || str_is(ph, "f")) {
        if (f->cat.type == IS_STRING && f->cat.escaped)
            return BAIL;
        if (str_is(&f->cat, "fwdbwd"))
            return add_flow(sc, f, str_is(ph, "f"), start, stop, body);
    } else if (str_is(ph, "i") || str_is(ph, "I")) {
        if (f->name.type == IS_STRING && f->name.escaped)
            return BAIL;
        if (str_is(&f->name, "[memory]")) {
            sc->tracks_handed = 1;
            return hand_back(sc, start, stop, body);
        }
    }
    return count_phase(sc, ph->s, ph->len);
}

static void reset_slice(Scanner *sc) {
    Buf *cols[] = {&sc->kind, &sc->name_e, &sc->track_e, &sc->ts, &sc->dur, &sc->correlation,
                   &sc->external_id, &sc->sequence, &sc->nbytes, &sc->stack_e, &sc->shape_e};
    for (size_t i = 0; i < sizeof(cols) / sizeof(cols[0]); i++)
        cols[i]->len = 0;
    sc->rows = 0;
    sc->clamp_dur = 0;
    sc->negative_durs = 0;
    sc->times_out_of_range = 0;
    if (sc->phase_counts.data)
        memset(sc->phase_counts.data, 0, sc->phase_counts.len);
    sc->handed.len = 0;
    Buf *flow_cols[] = {&sc->flow_id, &sc->flow_end, &sc->flow_track_e, &sc->flow_ts, &sc->flow_span};
    for (size_t i = 0; i < sizeof(flow_cols) / sizeof(flow_cols[0]); i++)
        flow_cols[i]->len = 0;
    sc->flows = 0;
    sc->tracks_handed = 0;
    sc->scanned = 0;
}

/* When a handed-back event interns a track, the slice's flows are handed back too, merged in file
 * order with the other spans: the reference interns their tracks in that order. */
static int hand_back_flows(Scanner *sc) {
    Buf merged = {NULL, 0, 0};
    size_t a = 0, b = 0, na = sc->handed.len / (2 * sizeof(Py_ssize_t)), nb = sc->flows;
    while (a < na || b < nb) {
        int take_flow = a == na || (b < nb && BUF_AT(&sc->flow_span, Py_ssize_t, 2 * b) <
                                                   BUF_AT(&sc->handed, Py_ssize_t, 2 * a));
        Buf *from = take_flow ? &sc->flow_span : &sc->handed;
        size_t i = take_flow ? b++ : a++;
        if (buf_grow(&merged, 2 * sizeof(Py_ssize_t)) < 0) {
            free(merged.data);
            return fail(sc, PyExc_MemoryError, "out of memory");
        }
        memcpy(merged.data + merged.len, from->data + 2 * i * sizeof(Py_ssize_t), 2 * sizeof(Py_ssize_t));
        merged.len += 2 * sizeof(Py_ssize_t);
    }
    free(sc->handed.data);
    sc->handed = merged;
    sc->flows = 0;
    sc->flow_id.len = sc->flow_end.len = sc->flow_track_e.len = sc->flow_ts.len = sc->flow_span.len = 0;
    return OK;
}

static int scan_body(Scanner *sc, const char *body, size_t size) {
    const char *p = body, *end = body + size;
    p = skip_ws(p, end);
    if (p == end)
        return OK; /* no events */
    for (;;) {
        if (*p != '{')
            return BAIL; /* not an object (or not JSON): the reference says which */
        Fields f;
        const char *start = p;
        p = read_event(p, end, &f);
        if (!p)
            return BAIL; /* invalid, or nested too deeply: the reference decoder says why */
        int r = take_event(sc, &f, start, p, body);
        if (r != OK)
            return r;
        p = skip_ws(p, end);
        if (p == end)
            return OK;
        if (*p != ',')
            return BAIL;
        p = skip_ws(p + 1, end);
        if (p == end)
            return BAIL; /* a trailing comma */
    }
}

/* ---------------------------------------------------------------- Python methods */

static PyObject *Scanner_scan(Scanner *sc, PyObject *body) {
    if (!PyBytes_Check(body)) {
        PyErr_SetString(PyExc_TypeError, "scan() takes bytes");
        return NULL;
    }
    if (sc->busy) {
        PyErr_SetString(PyExc_RuntimeError, "a ColumnScanner serves one thread at a time");
        return NULL;
    }
    reset_slice(sc);
    char *data;
    Py_ssize_t size;
    if (PyBytes_AsStringAndSize(body, &data, &size) < 0)
        return NULL;
    sc->busy = 1;
    sc->fail_type = NULL;
    sc->released = PyEval_SaveThread(); /* `body` is immutable and held by the caller */
    int r = scan_body(sc, data, (size_t)size);
    if (r == OK && sc->flows && sc->tracks_handed)
        r = hand_back_flows(sc);
    PyEval_RestoreThread(sc->released);
    sc->released = NULL;
    sc->busy = 0;
    if (r == ERR) {
        if (sc->fail_type)
            PyErr_SetString(sc->fail_type, sc->fail_message);
        reset_slice(sc);
        return NULL;
    }
    if (r == BAIL) {
        reset_slice(sc);
        Py_RETURN_NONE;
    }
    size_t n = sc->handed.len / (2 * sizeof(Py_ssize_t));
    PyObject *spans = PyList_New((Py_ssize_t)n);
    for (size_t i = 0; spans && i < n; i++) {
        PyObject *span = Py_BuildValue("(nn)", BUF_AT(&sc->handed, Py_ssize_t, 2 * i),
                                       BUF_AT(&sc->handed, Py_ssize_t, 2 * i + 1));
        if (!span) {
            Py_CLEAR(spans);
            break;
        }
        PyList_SetItem(spans, (Py_ssize_t)i, span); /* steals the reference */
    }
    if (!spans) {
        reset_slice(sc);
        return NULL;
    }
    sc->scanned = 1;
    return spans;
}

/* Resolve the entries rows refer to, in row order, through `intern`. */
static int resolve(Scanner *sc, Table *t, Buf *refs, size_t count) {
    for (size_t row = 0; row < count; row++) {
        int32_t i = BUF_AT(refs, int32_t, row);
        if (i < 0)
            continue;
        Entry *e = &t->entries[i];
        if (e->id >= 0)
            continue;
        PyObject *id;
        if (t == &sc->tracks) {
            size_t split = strlen(e->key); /* pid text, NUL, tid text: NUL never occurs in JSON text */
            id = PyObject_CallFunction(sc->track_id, "y#y#", e->key, (Py_ssize_t)split, e->key + split + 1,
                                       (Py_ssize_t)(e->len - split - 1));
        } else if (t == &sc->shapes) {
            size_t split = strlen(e->key);
            id = PyObject_CallFunction(sc->shapes_id, "y#y#", e->key, (Py_ssize_t)split, e->key + split + 1,
                                       (Py_ssize_t)(e->len - split - 1));
        } else {
            PyObject *s = entry_str(sc, e);
            if (!s)
                return ERR;
            id = PyObject_CallFunctionObjArgs(sc->name_id, s, NULL);
            Py_DECREF(s);
        }
        if (!id)
            return ERR;
        long v = PyLong_AsLong(id);
        Py_DECREF(id);
        if (v == -1 && PyErr_Occurred())
            return ERR;
        if (v < 0 || v > INT32_MAX) {
            PyErr_SetString(PyExc_ValueError, "an interned id outside 0..2**31-1");
            return ERR;
        }
        e->id = (int32_t)v;
    }
    return OK;
}

static PyObject *ids_column(Table *t, Buf *refs, size_t rows) {
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(rows * sizeof(int32_t)));
    if (!out)
        return NULL;
    int32_t *ids = (int32_t *)PyBytes_AsString(out);
    for (size_t row = 0; row < rows; row++) {
        int32_t i = BUF_AT(refs, int32_t, row);
        ids[row] = i < 0 ? -1 : t->entries[i].id;
    }
    return out;
}

static PyObject *bytes_of(Buf *b) {
    return PyBytes_FromStringAndSize(b->data ? b->data : "", (Py_ssize_t)b->len);
}

/* (kind, name, track, ts, dur, correlation, external_id, sequence, nbytes, stack, shapes,
 *  flow id, flow is_end, flow track, flow ts, {phase: skipped count}, (times out of range,
 *  negative durations)): the slice's columns as machine bytes, for array.frombytes. The row columns
 *  come in the order of model.ROW_COLUMNS. */
static PyObject *Scanner_commit(Scanner *sc, PyObject *unused) {
    (void)unused;
    if (!sc->scanned) {
        PyErr_SetString(PyExc_RuntimeError, "commit() without a successful scan()");
        return NULL;
    }
    PyObject *result = NULL, *skipped = NULL;
    /* the reference's order: the flows' tracks, then the rows' names, tracks, call stacks, shapes */
    if (resolve(sc, &sc->tracks, &sc->flow_track_e, sc->flows) != OK ||
        resolve(sc, &sc->names, &sc->name_e, sc->rows) != OK || resolve(sc, &sc->tracks, &sc->track_e, sc->rows) != OK ||
        resolve(sc, &sc->names, &sc->stack_e, sc->rows) != OK || resolve(sc, &sc->shapes, &sc->shape_e, sc->rows) != OK)
        goto done;
    if (sc->clamp_dur) {
        for (size_t row = 0; row < sc->rows; row++) {
            double *d = &BUF_AT(&sc->dur, double, row);
            if (!(*d > 0.0))
                *d = 0.0;
        }
    }
    skipped = PyDict_New();
    if (!skipped)
        goto done;
    for (size_t i = 0; i < sc->phases.n && (i + 1) * sizeof(int64_t) <= sc->phase_counts.len; i++) {
        int64_t count = BUF_AT(&sc->phase_counts, int64_t, i);
        if (!count)
            continue;
        PyObject *ph = PyUnicode_DecodeUTF8(sc->phases.entries[i].key, (Py_ssize_t)sc->phases.entries[i].len, "replace");
        PyObject *n = ph ? PyLong_FromLongLong(count) : NULL;
        int r = n ? PyDict_SetItem(skipped, ph, n) : -1;
        Py_XDECREF(ph);
        Py_XDECREF(n);
        if (r < 0)
            goto done;
    }
    enum { N = 15 };
    PyObject *cols[N] = {
        bytes_of(&sc->kind), ids_column(&sc->names, &sc->name_e, sc->rows),
        ids_column(&sc->tracks, &sc->track_e, sc->rows), bytes_of(&sc->ts), bytes_of(&sc->dur),
        bytes_of(&sc->correlation), bytes_of(&sc->external_id), bytes_of(&sc->sequence), bytes_of(&sc->nbytes),
        ids_column(&sc->names, &sc->stack_e, sc->rows), ids_column(&sc->shapes, &sc->shape_e, sc->rows),
        bytes_of(&sc->flow_id), bytes_of(&sc->flow_end), ids_column(&sc->tracks, &sc->flow_track_e, sc->flows),
        bytes_of(&sc->flow_ts)};
    int ok = 1;
    for (int i = 0; i < N; i++)
        ok &= cols[i] != NULL;
    PyObject *counts = ok ? Py_BuildValue("(LL)", (long long)sc->times_out_of_range, (long long)sc->negative_durs)
                          : NULL;
    if (counts && (result = PyTuple_New(N + 2)) != NULL) {
        for (int i = 0; i < N; i++) {
            PyTuple_SetItem(result, i, cols[i]); /* steals the reference */
            cols[i] = NULL;
        }
        Py_INCREF(skipped);
        PyTuple_SetItem(result, N, skipped);
        PyTuple_SetItem(result, N + 1, counts);
        counts = NULL;
    }
    Py_XDECREF(counts);
    for (int i = 0; i < N; i++)
        Py_XDECREF(cols[i]);
done:
    Py_XDECREF(skipped);
    reset_slice(sc);
    return result;
}

/* The callables are usually bound methods of the object that owns the scanner: a reference
 * cycle, so the scanner takes part in garbage collection. */
static int Scanner_traverse(Scanner *sc, visitproc visit, void *arg) {
    Py_VISIT(Py_TYPE(sc));
    Py_VISIT(sc->name_id);
    Py_VISIT(sc->track_id);
    Py_VISIT(sc->shapes_id);
    Py_VISIT(sc->kind_of);
    Py_VISIT(sc->loads);
    return 0;
}

static int Scanner_clear(Scanner *sc) {
    Py_CLEAR(sc->name_id);
    Py_CLEAR(sc->track_id);
    Py_CLEAR(sc->shapes_id);
    Py_CLEAR(sc->kind_of);
    Py_CLEAR(sc->loads);
    return 0;
}

static int Scanner_init(Scanner *sc, PyObject *args, PyObject *kwargs) {
    static char *kwlist[] = {"name_id", "track_id", "shapes_id", "kind_of", "loads", "cpu_op", "copy_kinds", NULL};
    PyObject *name_id, *track_id, *shapes_id, *kind_of, *loads;
    int cpu_op, memcpy_kind, memset_kind;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OOOOOi(ii)", kwlist, &name_id, &track_id, &shapes_id, &kind_of,
                                     &loads, &cpu_op, &memcpy_kind, &memset_kind))
        return -1;
    PyObject *fns[] = {name_id, track_id, shapes_id, kind_of, loads};
    for (int i = 0; i < 5; i++)
        if (!PyCallable_Check(fns[i])) {
            PyErr_SetString(PyExc_TypeError, "ColumnScanner takes callables");
            return -1;
        }
    Scanner_clear(sc);
    Py_INCREF(name_id);
    Py_INCREF(track_id);
    Py_INCREF(shapes_id);
    Py_INCREF(kind_of);
    Py_INCREF(loads);
    sc->name_id = name_id;
    sc->track_id = track_id;
    sc->shapes_id = shapes_id;
    sc->kind_of = kind_of;
    sc->loads = loads;
    sc->cpu_op = cpu_op;
    sc->memcpy_kind = memcpy_kind;
    sc->memset_kind = memset_kind;
    return 0;
}

static void Scanner_dealloc(Scanner *sc) {
    PyTypeObject *type = Py_TYPE(sc);
    PyObject_GC_UnTrack(sc);
    Scanner_clear(sc);
    Table *tables[] = {&sc->names, &sc->cats, &sc->tracks, &sc->shapes, &sc->phases};
    for (size_t i = 0; i < sizeof(tables) / sizeof(tables[0]); i++)
        table_free(tables[i]);
    Buf *bufs[] = {&sc->kind, &sc->name_e, &sc->track_e, &sc->ts, &sc->dur, &sc->correlation, &sc->external_id,
                   &sc->sequence, &sc->nbytes, &sc->stack_e, &sc->shape_e, &sc->phase_counts, &sc->handed,
                   &sc->flow_id, &sc->flow_end, &sc->flow_track_e, &sc->flow_ts, &sc->flow_span};
    for (size_t i = 0; i < sizeof(bufs) / sizeof(bufs[0]); i++)
        free(bufs[i]->data);
    freefunc tp_free = (freefunc)PyType_GetSlot(type, Py_tp_free);
    tp_free(sc);
    Py_DECREF(type);
}

static PyMethodDef Scanner_methods[] = {
    {"scan", (PyCFunction)Scanner_scan, METH_O,
     "scan(body) -> list of (start, end) spans to decode the reference way, or None: decode the "
     "whole slice the reference way"},
    {"commit", (PyCFunction)Scanner_commit, METH_NOARGS,
     "commit() -> the scanned slice's columns as bytes, and skipped counts by phase"},
    {NULL, NULL, 0, NULL},
};

static PyType_Slot Scanner_slots[] = {
    {Py_tp_doc, "ColumnScanner(name_id, track_id, shapes_id, kind_of, loads, cpu_op, copy_kinds)"},
    {Py_tp_init, Scanner_init},
    {Py_tp_new, PyType_GenericNew},
    {Py_tp_dealloc, Scanner_dealloc},
    {Py_tp_traverse, Scanner_traverse},
    {Py_tp_clear, Scanner_clear},
    {Py_tp_methods, Scanner_methods},
    {0, NULL},
};

static PyType_Spec Scanner_spec = {
    "stepscope.trace._columns.ColumnScanner", sizeof(Scanner), 0, Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC, Scanner_slots,
};

/* ---------------------------------------------------------------- walking JSON text
 *
 * The compiled twin of jsonwalk.py's `_walk` (the reference, tested against this): where the open
 * containers close, where their last whole item ends, and the first problem, as a code and a byte
 * position (the words are jsonwalk.describe's). Used only after a decoder refused a text; it
 * holds the GIL (it may call PyOS_string_to_double) and allocates only its bracket stack. */

enum { W_ENDS_EARLY = 1, W_ENDS_IN_STRING, W_ENDS_IN_NUMBER, W_ENDS_IN_LITERAL, W_ENDS_IN_UTF8, W_TRAILING_TEXT,
       W_EXPECTED_COMMA_OR_BRACKET, W_EXPECTED_COMMA_OR_BRACE, W_EXPECTED_COLON, W_EXPECTED_KEY, W_TOO_DEEP,
       W_CONTROL_CHARACTER, W_INVALID_ESCAPE, W_LONE_SURROGATE, W_INVALID_UTF8, W_MALFORMED_NUMBER,
       W_INTEGER_OUT_OF_RANGE, W_NUMBER_OUT_OF_RANGE, W_NOT_A_VALUE };

#define W_MAX_INT_DIGITS 4300 /* msgspec reads longer integers as out of range */
#define W_DOUBLE_DIGITS 308   /* fewer digits and no exponent: below a double's largest value */

typedef struct {
    size_t pos;
    int code; /* 0: none */
} WFound;

static inline int w_found(WFound *f, size_t pos, int code) {
    f->pos = pos;
    f->code = code;
    return 1;
}

/* The first byte from `i` on that is not UTF-8, where CPython's decoder reports it (the lead byte
 * of a bad sequence, or a stray byte); `code` W_ENDS_IN_UTF8 when the text ends inside a character
 * that was valid so far. n when every byte is valid. */
static size_t w_utf8(const unsigned char *s, size_t i, size_t n, int *code) {
    *code = 0;
    while (i < n) {
        if (n - i >= 8) {
            uint64_t x;
            memcpy(&x, s + i, 8);
            if (!(x & 0x8080808080808080ULL)) {
                i += 8;
                continue;
            }
        }
        unsigned c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        unsigned lo = 0x80, hi = 0xBF; /* the allowed range of the second byte */
        if (c >= 0xC2 && c <= 0xDF) {
            len = 2;
        } else if (c >= 0xE0 && c <= 0xEF) {
            len = 3;
            if (c == 0xE0)
                lo = 0xA0; /* no overlong forms */
            else if (c == 0xED)
                hi = 0x9F; /* no surrogates */
        } else if (c >= 0xF0 && c <= 0xF4) {
            len = 4;
            if (c == 0xF0)
                lo = 0x90;
            else if (c == 0xF4)
                hi = 0x8F; /* nothing past U+10FFFF */
        } else {
            *code = W_INVALID_UTF8;
            return i;
        }
        for (size_t k = 1; k < len; k++) {
            if (i + k >= n) {
                *code = W_ENDS_IN_UTF8;
                return i;
            }
            unsigned b = s[i + k];
            if (b < (k == 1 ? lo : 0x80) || b > (k == 1 ? hi : 0xBF)) {
                *code = W_INVALID_UTF8;
                return i;
            }
        }
        i += len;
    }
    return n;
}

static inline size_t w_ws(const unsigned char *t, size_t pos, size_t n) {
    while (pos < n && (t[pos] == ' ' || t[pos] == '\n' || t[pos] == '\r' || t[pos] == '\t'))
        pos++;
    return pos;
}

static inline int w_hex4(const unsigned char *t, size_t at, size_t n, unsigned *unit) {
    if (n - at < 4)
        return 0;
    unsigned u = 0;
    for (int k = 0; k < 4; k++) {
        int h = HEX[t[at + k]];
        if (h < 0)
            return 0;
        u = u << 4 | (unsigned)h;
    }
    *unit = u;
    return 1;
}

/* The offset of an escaped surrogate without its pair in the string t[s, e) (its quotes
 * included), or (size_t)-1: a high one must be followed at once by an escaped low one. */
static size_t w_surrogates(const unsigned char *t, size_t s, size_t e) {
    size_t want_low_at = (size_t)-1, previous_end = (size_t)-1;
    for (size_t i = s; i < e; i++) {
        if (t[i] != '\\')
            continue;
        unsigned unit = 0;
        int is_unit = t[i + 1] == 'u' && w_hex4(t, i + 2, e, &unit);
        size_t len = is_unit ? 6 : 2;
        int adjacent = i == previous_end;
        previous_end = i + len;
        size_t at = i;
        i += len - 1;
        if (want_low_at != (size_t)-1) {
            if (!(adjacent && is_unit && unit >= 0xDC00 && unit <= 0xDFFF))
                return want_low_at;
            want_low_at = (size_t)-1;
            continue;
        }
        if (is_unit && unit >= 0xDC00 && unit <= 0xDFFF)
            return at;
        if (is_unit && unit >= 0xD800 && unit <= 0xDBFF)
            want_low_at = at;
    }
    return want_low_at;
}

/* A string at `pos` (its quote): 1 with the problem in `f`, else 0 and `*end` after it. */
static int w_string(const unsigned char *t, size_t pos, size_t n, size_t *end, WFound *f) {
    size_t p = pos + 1;
    int escaped = 0;
    for (;;) {
        while (n - p >= 8) {
            uint64_t x;
            memcpy(&x, t + p, 8);
            if (has_string_stop(x))
                break;
            p += 8;
        }
        while (p < n && !STRING_STOP[t[p]])
            p++;
        if (p >= n)
            return w_found(f, n, W_ENDS_IN_STRING);
        if (t[p] == '"')
            break;
        if (t[p] < 0x20)
            return w_found(f, p, W_CONTROL_CHARACTER);
        /* an escape */
        if (p + 1 >= n)
            return w_found(f, n, W_ENDS_IN_STRING);
        unsigned char e = t[p + 1];
        if (e == '"' || e == '\\' || e == '/' || e == 'b' || e == 'f' || e == 'n' || e == 'r' || e == 't') {
            p += 2;
            continue;
        }
        if (e != 'u')
            return w_found(f, p, W_INVALID_ESCAPE);
        size_t k = 0;
        while (k < 4 && p + 2 + k < n && HEX[t[p + 2 + k]] >= 0)
            k++;
        if (k == 4) {
            escaped = 1;
            p += 6;
            continue;
        }
        if (p + 2 + k >= n) /* a \u escape the end of the text cut */
            return w_found(f, n, W_ENDS_IN_STRING);
        return w_found(f, p, W_INVALID_ESCAPE);
    }
    *end = p + 1;
    if (escaped) {
        size_t at = w_surrogates(t, pos, p + 1);
        if (at != (size_t)-1)
            return w_found(f, at, W_LONE_SURROGATE);
    }
    return 0;
}

/* Whether t[pos, n) is the start of a valid number (which more text could complete). */
static int w_number_prefix(const unsigned char *t, size_t pos, size_t n) {
    size_t p = pos;
    if (p < n && t[p] == '-')
        p++;
    if (p == n)
        return 1;
    if (t[p] == '0')
        p++;
    else if (t[p] >= '1' && t[p] <= '9')
        while (p < n && t[p] >= '0' && t[p] <= '9')
            p++;
    else
        return 0;
    if (p == n)
        return 1;
    int fraction_digits = -1;
    if (t[p] == '.') {
        p++;
        fraction_digits = 0;
        while (p < n && t[p] >= '0' && t[p] <= '9')
            p++, fraction_digits++;
        if (p == n)
            return 1;
    }
    if ((t[p] != 'e' && t[p] != 'E') || fraction_digits == 0)
        return 0;
    p++;
    if (p < n && (t[p] == '+' || t[p] == '-'))
        p++;
    while (p < n && t[p] >= '0' && t[p] <= '9')
        p++;
    return p == n;
}

/* A number at `pos`: 1 with the problem in `f`, else 0 and `*end` after it. -1 on a Python error. */
static int w_number(const unsigned char *t, size_t pos, size_t n, int big_ints, size_t *end, WFound *f) {
    size_t p = pos;
    int matched = 1, exponent = 0, fraction = 0;
    if (p < n && t[p] == '-')
        p++;
    if (p < n && t[p] == '0')
        p++;
    else if (p < n && t[p] >= '1' && t[p] <= '9')
        while (p < n && t[p] >= '0' && t[p] <= '9')
            p++;
    else
        matched = 0;
    if (matched && p + 1 < n && t[p] == '.' && t[p + 1] >= '0' && t[p + 1] <= '9') {
        fraction = 1;
        p += 2;
        while (p < n && t[p] >= '0' && t[p] <= '9')
            p++;
    }
    if (matched && p < n && (t[p] == 'e' || t[p] == 'E')) {
        size_t q = p + 1;
        if (q < n && (t[q] == '+' || t[q] == '-'))
            q++;
        if (q < n && t[q] >= '0' && t[q] <= '9') {
            exponent = 1;
            while (q < n && t[q] >= '0' && t[q] <= '9')
                q++;
            p = q;
        }
    }
    if (!matched || (p < n && (t[p] == '.' || t[p] == 'e' || t[p] == 'E'))) {
        if (w_number_prefix(t, pos, n))
            return w_found(f, n, W_ENDS_IN_NUMBER);
        return w_found(f, pos, matched ? W_MALFORMED_NUMBER : W_NOT_A_VALUE);
    }
    *end = p;
    size_t len = p - pos;
    if (!fraction && !exponent) {
        size_t digits = len - (t[pos] == '-');
        if (big_ints)
            return digits > W_MAX_INT_DIGITS ? w_found(f, pos, W_INTEGER_OUT_OF_RANGE) : 0;
        if (digits <= W_DOUBLE_DIGITS)
            return 0;
    } else if (!exponent && len <= W_DOUBLE_DIGITS) {
        return 0;
    }
    char small[64];
    char *text = len < sizeof(small) ? small : malloc(len + 1);
    if (!text) {
        PyErr_NoMemory();
        return -1;
    }
    memcpy(text, t + pos, len);
    text[len] = '\0';
    double v = PyOS_string_to_double(text, NULL, NULL);
    if (text != small)
        free(text);
    if (v == -1.0 && PyErr_Occurred())
        return -1;
    return isinf(v) ? w_found(f, pos, W_NUMBER_OUT_OF_RANGE) : 0;
}

static int w_literal(const unsigned char *t, size_t pos, size_t n, const char *lit, size_t *end, WFound *f) {
    size_t len = strlen(lit);
    if (n - pos >= len && memcmp(t + pos, lit, len) == 0) {
        *end = pos + len;
        return 0;
    }
    size_t rest = n - pos < len ? n - pos : len;
    if (pos + rest == n && memcmp(t + pos, lit, rest) == 0)
        return w_found(f, n, W_ENDS_IN_LITERAL);
    return w_found(f, pos, W_NOT_A_VALUE);
}

enum { W_VALUE, W_FIRST_ITEM, W_FIRST_KEY, W_KEY, W_COLON, W_AFTER };

/* The walk itself (see jsonwalk._walk, which this follows step for step). -1 on a Python error. */
static int w_walk(const unsigned char *t, size_t n, size_t pos, const unsigned char *inside, size_t n_inside,
                  int document, size_t max_depth, int big_ints, unsigned char *stack, Py_ssize_t *closed,
                  size_t *n_closed, size_t *last_item, int *has_last, WFound *f) {
    size_t depth = n_inside, item_depth = n_inside, value_end = pos;
    memcpy(stack, inside, n_inside);
    *n_closed = 0;
    *has_last = 0;
    int state = !depth ? W_VALUE : stack[depth - 1] == '[' ? W_FIRST_ITEM : W_FIRST_KEY;
    for (;;) {
        if (state == W_AFTER) {
            if (depth == item_depth && *n_closed == 0) {
                *last_item = value_end;
                *has_last = 1;
            }
            if (!depth) {
                size_t e = w_ws(t, value_end, n);
                if (e < n && document)
                    w_found(f, e, W_TRAILING_TEXT);
                return 0;
            }
        }
        pos = w_ws(t, pos, n);
        if (pos >= n) {
            w_found(f, n, W_ENDS_EARLY);
            return 0;
        }
        unsigned char c = t[pos];
        unsigned char close = depth ? (stack[depth - 1] == '[' ? ']' : '}') : 0;
        if (state == W_AFTER) {
            if (c == ',') {
                pos++;
                state = stack[depth - 1] == '[' ? W_VALUE : W_KEY;
                continue;
            }
            if (c != close) {
                w_found(f, pos, stack[depth - 1] == '[' ? W_EXPECTED_COMMA_OR_BRACKET : W_EXPECTED_COMMA_OR_BRACE);
                return 0;
            }
        } else if (state == W_COLON) {
            if (c != ':') {
                w_found(f, pos, W_EXPECTED_COLON);
                return 0;
            }
            pos++;
            state = W_VALUE;
            continue;
        } else if (state == W_KEY || (state == W_FIRST_KEY && c != '}')) {
            if (c != '"') {
                w_found(f, pos, W_EXPECTED_KEY);
                return 0;
            }
            size_t end;
            if (w_string(t, pos, n, &end, f))
                return 0;
            pos = end;
            state = W_COLON;
            continue;
        } else if (state == W_FIRST_ITEM && c != ']') {
            state = W_VALUE;
        }
        if (state != W_VALUE) { /* a close: after a value, or of an empty container */
            depth--;
            if (depth < n_inside && *n_closed < n_inside - depth)
                closed[(*n_closed)++] = (Py_ssize_t)pos;
            pos = value_end = pos + 1;
            state = W_AFTER;
            continue;
        }
        /* a value */
        if (c == '[' || c == '{') {
            if (depth >= max_depth) {
                w_found(f, pos, W_TOO_DEEP);
                return 0;
            }
            stack[depth++] = c;
            pos++;
            state = c == '[' ? W_FIRST_ITEM : W_FIRST_KEY;
            continue;
        }
        size_t end = pos;
        int r;
        if (c == '"')
            r = w_string(t, pos, n, &end, f);
        else if (c == '-' || (c >= '0' && c <= '9'))
            r = w_number(t, pos, n, big_ints, &end, f);
        else if (c == 't')
            r = w_literal(t, pos, n, "true", &end, f);
        else if (c == 'f')
            r = w_literal(t, pos, n, "false", &end, f);
        else if (c == 'n')
            r = w_literal(t, pos, n, "null", &end, f);
        else
            r = w_found(f, pos, W_NOT_A_VALUE);
        if (r)
            return r < 0 ? -1 : 0;
        pos = value_end = end;
        state = W_AFTER;
    }
}

/* walk_json(text, start, inside, document, max_depth, big_ints) -> (closed, last_item, problem):
 * `closed` the positions where the containers of `inside` closed (innermost first), `last_item`
 * after the last whole item (or None), `problem` (position, code) or None. */
static PyObject *walk_json(PyObject *module, PyObject *args) {
    (void)module;
    const char *text, *inside;
    Py_ssize_t n, start, n_inside, max_depth;
    int document, big_ints;
    if (!PyArg_ParseTuple(args, "y#ny#pnp", &text, &n, &start, &inside, &n_inside, &document, &max_depth,
                          &big_ints))
        return NULL;
    if (start < 0 || start > n || max_depth < 0 || max_depth > (1 << 24) || n_inside > max_depth) {
        PyErr_SetString(PyExc_ValueError, "walk_json: start, inside or max_depth out of range");
        return NULL;
    }
    for (Py_ssize_t i = 0; i < n_inside; i++)
        if (inside[i] != '[' && inside[i] != '{') {
            PyErr_SetString(PyExc_ValueError, "walk_json: inside holds only '[' and '{'");
            return NULL;
        }
    unsigned char *stack = malloc((size_t)max_depth + 1);
    Py_ssize_t *closed = malloc(((size_t)n_inside + 1) * sizeof(Py_ssize_t));
    if (!stack || !closed) {
        free(stack);
        free(closed);
        return PyErr_NoMemory();
    }
    const unsigned char *t = (const unsigned char *)text;
    WFound f = {0, 0};
    size_t n_closed = 0, last_item = 0;
    int has_last = 0;
    int r = w_walk(t, (size_t)n, (size_t)start, (const unsigned char *)inside, (size_t)n_inside, document,
                   (size_t)max_depth, big_ints, stack, closed, &n_closed, &last_item, &has_last, &f);
    free(stack);
    if (r < 0) {
        free(closed);
        return NULL;
    }
    int utf8_code;
    size_t bad = w_utf8(t, (size_t)start, (size_t)n, &utf8_code);
    if (utf8_code && (!f.code || bad <= f.pos))
        w_found(&f, bad, utf8_code);
    PyObject *closed_list = PyList_New((Py_ssize_t)n_closed);
    for (size_t i = 0; closed_list && i < n_closed; i++) {
        PyObject *v = PyLong_FromSsize_t(closed[i]);
        if (!v) {
            Py_CLEAR(closed_list);
            break;
        }
        PyList_SetItem(closed_list, (Py_ssize_t)i, v); /* steals the reference */
    }
    free(closed);
    if (!closed_list)
        return NULL;
    PyObject *last = has_last ? PyLong_FromSize_t(last_item) : (Py_INCREF(Py_None), Py_None);
    PyObject *problem = f.code ? Py_BuildValue("(ni)", (Py_ssize_t)f.pos, f.code) : (Py_INCREF(Py_None), Py_None);
    if (!last || !problem) {
        Py_DECREF(closed_list);
        Py_XDECREF(last);
        Py_XDECREF(problem);
        return NULL;
    }
    return Py_BuildValue("(NNN)", closed_list, last, problem);
}

static PyMethodDef module_methods[] = {
    {"walk_json", walk_json, METH_VARARGS,
     "walk_json(text, start, inside, document, max_depth, big_ints) -> (closed, last_item, (position, code) or "
     "None): see stepscope.trace.jsonwalk"},
    {NULL, NULL, 0, NULL},
};

static int module_exec(PyObject *module) {
    init_tables();
    PyObject *type = PyType_FromSpec(&Scanner_spec);
    if (!type)
        return -1;
    if (PyModule_AddObject(module, "ColumnScanner", type) < 0) {
        Py_DECREF(type);
        return -1;
    }
    return 0;
}

static PyModuleDef_Slot module_slots[] = {{Py_mod_exec, module_exec}, {0, NULL}};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_columns", "Compiled column scanner for stepscope.trace (see _columns.c).", 0,
    module_methods, module_slots,
};

PyMODINIT_FUNC PyInit__columns(void) { return PyModuleDef_Init(&module_def); }
