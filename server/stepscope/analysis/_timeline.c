/* The compiled kernels of timeline_kernels.py: each track's layout, the lines of a thread at given
 * moments, figures by key, the per-step partition of time, and the reduction of a summary.
 * timeline_kernels.py states the contracts; its Python is the reference these follow step for step
 * (the same orders, the same float operations in the same order), so the results are identical.
 *
 * Built against the stable ABI (3.10+), like the other kernels: columns arrive as bytes
 * (array.tobytes()), in/out columns as bytearrays, results leave as bytes.
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define LINE_BITS 22
#define LINE_MASK ((1 << LINE_BITS) - 1)
#define CAT_RUNTIME 5 /* timeline.CATEGORIES' "runtime" and "sync": calls an operator may hold */
#define CAT_SYNC 6

/* A bytes (or, with `writable`, bytearray) argument of whole items of `item` bytes: its data and count. */
static int column(PyObject *obj, int writable, Py_ssize_t item, const char *what, char **data, Py_ssize_t *count) {
    Py_ssize_t size;
    if (writable) {
        if (!PyByteArray_Check(obj)) {
            PyErr_Format(PyExc_TypeError, "%s must be a bytearray", what);
            return -1;
        }
        size = PyByteArray_Size(obj);
        *data = PyByteArray_AsString(obj);
    } else {
        if (!PyBytes_Check(obj)) {
            PyErr_Format(PyExc_TypeError, "%s must be bytes", what);
            return -1;
        }
        size = PyBytes_Size(obj);
        *data = PyBytes_AsString(obj);
    }
    if (size % item) {
        PyErr_Format(PyExc_ValueError, "%s does not hold whole items", what);
        return -1;
    }
    *count = size / item;
    return 0;
}

static double get_d(const char *data, Py_ssize_t i) {
    double v;
    memcpy(&v, data + (size_t)i * sizeof(double), sizeof(double));
    return v;
}

static int32_t get_i(const char *data, Py_ssize_t i) {
    int32_t v;
    memcpy(&v, data + (size_t)i * sizeof(int32_t), sizeof(int32_t));
    return v;
}

static void set_i(char *data, Py_ssize_t i, int32_t v) { memcpy(data + (size_t)i * sizeof(int32_t), &v, sizeof(int32_t)); }

/* A new bytes object of `size` bytes to fill (NULL with an exception on failure). */
static PyObject *new_bytes(Py_ssize_t size, char **data) {
    PyObject *out = PyBytes_FromStringAndSize(NULL, size);
    if (out)
        *data = PyBytes_AsString(out);
    return out;
}

/* ---------------------------------------------------------------- the innermost node at moments */

typedef struct {
    double t;
    Py_ssize_t q;
} Query;

static int query_order(const void *pa, const void *pb) {
    const Query *a = pa, *b = pb;
    if (a->t != b->t)
        return a->t < b->t ? -1 : 1;
    return (a->q > b->q) - (a->q < b->q);
}

/* For `m` queries (their times and positions; sorted here), the line of the innermost of `n` nodes
 * (in start order) open at each time, or -1, written at the query's position in `out`. */
static int innermost_into(const char *starts, const char *ends, const char *lines, Py_ssize_t n, Query *queries,
                          Py_ssize_t m, int32_t *out) {
    double *stack_end = malloc((size_t)(n + 1) * sizeof(double));
    int32_t *stack_line = malloc((size_t)(n + 1) * sizeof(int32_t));
    if (!stack_end || !stack_line) {
        free(stack_end);
        free(stack_line);
        PyErr_NoMemory();
        return -1;
    }
    qsort(queries, (size_t)m, sizeof(Query), query_order);
    Py_ssize_t j = 0, depth = 0;
    for (Py_ssize_t k = 0; k < m; k++) {
        double t = queries[k].t;
        while (j < n && get_d(starts, j) <= t) {
            double s = get_d(starts, j);
            while (depth && stack_end[depth - 1] <= s)
                depth--;
            stack_end[depth] = get_d(ends, j);
            stack_line[depth] = get_i(lines, j);
            depth++;
            j++;
        }
        while (depth && stack_end[depth - 1] <= t)
            depth--;
        out[queries[k].q] = depth ? stack_line[depth - 1] : -1;
    }
    free(stack_end);
    free(stack_line);
    return 0;
}

/* The three node columns of a (starts, ends, lines) tuple of bytes. */
static int node_columns(PyObject *nodes, char **starts, char **ends, char **lines, Py_ssize_t *n) {
    if (!PyTuple_Check(nodes) || PyTuple_Size(nodes) != 3) {
        PyErr_SetString(PyExc_TypeError, "main_nodes must be a tuple (starts, ends, lines)");
        return -1;
    }
    Py_ssize_t n_end, n_line;
    if (column(PyTuple_GetItem(nodes, 0), 0, 8, "node starts", starts, n) ||
        column(PyTuple_GetItem(nodes, 1), 0, 8, "node ends", ends, &n_end) ||
        column(PyTuple_GetItem(nodes, 2), 0, 4, "node lines", lines, &n_line))
        return -1;
    if (n_end != *n || n_line != *n) {
        PyErr_SetString(PyExc_ValueError, "the node columns differ in length");
        return -1;
    }
    return 0;
}

/* ---------------------------------------------------------------- layout_track */

typedef struct {
    double start, neg_dur;
    long row;
} Span;

static int span_order(const void *pa, const void *pb) {
    const Span *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->neg_dur != b->neg_dur)
        return a->neg_dur < b->neg_dur ? -1 : 1;
    return (a->row > b->row) - (a->row < b->row);
}

static PyObject *layout_track(PyObject *module, PyObject *args) {
    PyObject *rows, *ts_o, *dur_o, *name_o, *meaning_o, *launch_o, *row_line_o, *row_op_o, *name_open_o, *nodes_o;
    int node_kind;
    double w0, w1;
    Py_ssize_t offset;
    if (!PyArg_ParseTuple(args, "O!OOOOiddOOOOnO", &PyList_Type, &rows, &ts_o, &dur_o, &name_o, &meaning_o,
                          &node_kind, &w0, &w1, &launch_o, &row_line_o, &row_op_o, &name_open_o, &offset, &nodes_o))
        return NULL;
    char *node_s = NULL, *node_e = NULL, *node_l = NULL;
    Py_ssize_t n_nodes = 0;
    if (nodes_o != Py_None && node_columns(nodes_o, &node_s, &node_e, &node_l, &n_nodes))
        return NULL;
    char *ts, *dur, *name, *meaning, *row_line, *row_op, *name_open;
    Py_ssize_t columns, n_dur, n_name, names, n_open, n_line, n_op;
    PyObject *launch = launch_o != Py_None ? launch_o : NULL;
    if (column(ts_o, 0, 8, "ts", &ts, &columns) || column(dur_o, 0, 8, "dur", &dur, &n_dur) ||
        column(name_o, 0, 4, "name", &name, &n_name) || column(meaning_o, 0, 4, "meaning", &meaning, &names) ||
        column(row_line_o, 1, 4, "row_line", &row_line, &n_line) || column(row_op_o, 1, 4, "row_op", &row_op, &n_op) ||
        column(name_open_o, 1, 4, "name_open", &name_open, &n_open))
        return NULL;
    if (launch_o != Py_None && !PyDict_Check(launch_o)) {
        PyErr_SetString(PyExc_TypeError, "launch must be a dict or None");
        return NULL;
    }
    if (n_dur != columns || n_name != columns || n_line <= columns || n_op <= columns || n_open != names ||
        columns > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "the columns differ in length");
        return NULL;
    }
    Py_ssize_t n = PyList_Size(rows);
    Span *spans = malloc((size_t)(n + 1) * sizeof(Span));
    double *open_end = malloc((size_t)(n + 1) * sizeof(double)), *op_end = malloc((size_t)(n + 1) * sizeof(double));
    Py_ssize_t *open_idx = malloc((size_t)(n + 1) * sizeof(Py_ssize_t)), *op_idx = malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    int32_t *open_line = malloc((size_t)(n + 1) * sizeof(int32_t)), *op_name = malloc((size_t)(n + 1) * sizeof(int32_t));
    Query *unplaced = malloc((size_t)(n + 1) * sizeof(Query));
    int32_t *found = malloc((size_t)(n + 1) * sizeof(int32_t));
    PyObject *out[12] = {NULL}, *result = NULL;
    char *o_order, *o_start, *o_end, *o_depth, *o_parent, *o_line, *o_cat, *o_own, *o_outer, *o_node, *o_name, *o_lop;
    Py_ssize_t n_ops = 0, n_unplaced = 0;
    if (!spans || !open_end || !op_end || !open_idx || !op_idx || !open_line || !op_name || !unplaced || !found) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        long r = PyLong_AsLong(PyList_GetItem(rows, k));
        if (r == -1 && PyErr_Occurred())
            goto done;
        if (r < 0 || r >= columns) {
            PyErr_SetString(PyExc_IndexError, "a row outside the columns");
            goto done;
        }
        int32_t nid = get_i(name, r);
        if (nid < 0 || nid >= names) {
            PyErr_SetString(PyExc_IndexError, "a name outside the meanings");
            goto done;
        }
        spans[k] = (Span){get_d(ts, r), -get_d(dur, r), r};
    }
    qsort(spans, (size_t)n, sizeof(Span), span_order);
    if (!(out[0] = new_bytes(n * 4, &o_order)) || !(out[1] = new_bytes(n * 8, &o_start)) ||
        !(out[2] = new_bytes(n * 8, &o_end)) || !(out[3] = new_bytes(n * 4, &o_depth)) ||
        !(out[4] = new_bytes(n * 4, &o_parent)) || !(out[5] = new_bytes(n * 4, &o_line)) ||
        !(out[6] = new_bytes(n, &o_cat)) || !(out[7] = new_bytes(n * 8, &o_own)) || !(out[8] = new_bytes(n, &o_outer)) ||
        !(out[9] = new_bytes(n, &o_node)) || !(out[10] = new_bytes(n * 4, &o_name)) ||
        !(out[11] = new_bytes(n * 4, &o_lop)))
        goto done;
    memset(o_own, 0, (size_t)n * 8);
    memset(o_outer, 0, (size_t)n);
    Py_ssize_t depth = 0;
    for (Py_ssize_t k = 0; k < n; k++) {
        long r = spans[k].row;
        double s = spans[k].start, d = -spans[k].neg_dur, e = s + d;
        int32_t nid = get_i(name, r), m = get_i(meaning, nid);
        int32_t own = (m & LINE_MASK) - 1, cat = (m >> LINE_BITS) & 31, node = (m >> 27) & 3, is_op = (m >> 29) & 1;
        while (depth && open_end[depth - 1] <= s)
            depth--;
        int32_t inherited = depth ? open_line[depth - 1] : -1, line, call = -1;
        if (own >= 0)
            line = own;
        else if (launch) {
            PyObject *key = PyLong_FromLong(r);
            if (!key)
                goto done;
            PyObject *value = PyDict_GetItemWithError(launch, key); /* borrowed */
            Py_DECREF(key);
            if (!value && PyErr_Occurred())
                goto done;
            if (value) {
                long v = PyLong_AsLong(value);
                if (v == -1 && PyErr_Occurred())
                    goto done;
                if (v < 0 || v >= columns) {
                    PyErr_SetString(PyExc_IndexError, "a launch call outside the columns");
                    goto done;
                }
                call = (int32_t)v;
            }
            line = call >= 0 ? get_i(row_line, call) : -1;
        } else
            line = inherited;
        set_i(o_lop, k, launch ? get_i(row_op, call >= 0 ? call : n_op - 1) : -1);
        if (line < 0 && node_s && (!launch || call >= 0))
            unplaced[n_unplaced++] = (Query){launch ? get_d(ts, call) : s, k};
        set_i(row_line, r, line);
        double cs = s > w0 ? s : w0, ce = e < w1 ? e : w1;
        set_i(o_order, k, (int32_t)r);
        memcpy(o_start + k * 8, &cs, 8);
        memcpy(o_end + k * 8, &ce, 8);
        set_i(o_depth, k, (int32_t)depth);
        set_i(o_parent, k, depth ? (int32_t)(open_idx[depth - 1] + offset) : -1);
        set_i(o_line, k, line);
        o_cat[k] = (char)cat;
        set_i(o_name, k, nid);
        open_end[depth] = e;
        open_idx[depth] = k;
        int is_node = node == node_kind && own >= 0;
        o_node[k] = (char)is_node;
        open_line[depth] = is_node ? own : inherited;
        depth++;
        if (is_op || cat == CAT_RUNTIME || cat == CAT_SYNC) {
            while (n_ops && op_end[n_ops - 1] <= s) {
                n_ops--;
                set_i(name_open, op_name[n_ops], get_i(name_open, op_name[n_ops]) - 1);
            }
            if (!is_op) { /* a runtime call: the operator holding it launched its work */
                set_i(row_op, r, n_ops ? op_name[n_ops - 1] : -1);
                continue;
            }
            memcpy(o_own + k * 8, &d, 8);
            if (n_ops && op_end[n_ops - 1] >= e) { /* held by the enclosing operator: not that one's own time */
                double up = get_d(o_own, op_idx[n_ops - 1]) - d;
                memcpy(o_own + op_idx[n_ops - 1] * 8, &up, 8);
            }
            o_outer[k] = get_i(name_open, nid) ? 1 : 2;
            op_end[n_ops] = e;
            op_idx[n_ops] = k;
            op_name[n_ops] = nid;
            n_ops++;
            set_i(name_open, nid, get_i(name_open, nid) + 1);
        }
    }
    while (n_ops) {
        n_ops--;
        set_i(name_open, op_name[n_ops], get_i(name_open, op_name[n_ops]) - 1);
    }
    if (n_unplaced) {
        if (innermost_into(node_s, node_e, node_l, n_nodes, unplaced, n_unplaced, found))
            goto done;
        for (Py_ssize_t u = 0; u < n_unplaced; u++) { /* each query's q is its span: found[span] is its line */
            Py_ssize_t k = unplaced[u].q;
            set_i(o_line, k, found[k]);
            set_i(row_line, spans[k].row, found[k]);
        }
    }
    result = PyTuple_New(12);
    if (result)
        for (int i = 0; i < 12; i++) {
            PyTuple_SetItem(result, i, out[i]); /* steals the reference */
            out[i] = NULL;
        }
done:
    for (int i = 0; i < 12; i++)
        Py_XDECREF(out[i]);
    free(unplaced);
    free(found);
    free(spans);
    free(open_end);
    free(op_end);
    free(open_idx);
    free(op_idx);
    free(open_line);
    free(op_name);
    return result;
}

/* ---------------------------------------------------------------- examples */

static PyObject *examples(PyObject *module, PyObject *args) {
    PyObject *rows, *name_o;
    Py_ssize_t names;
    if (!PyArg_ParseTuple(args, "O!On", &PyList_Type, &rows, &name_o, &names))
        return NULL;
    char *name, *out_data;
    Py_ssize_t columns;
    if (column(name_o, 0, 4, "name", &name, &columns))
        return NULL;
    PyObject *out = new_bytes(names * 4, &out_data);
    if (!out)
        return NULL;
    memset(out_data, 0xff, (size_t)names * 4); /* -1 everywhere */
    Py_ssize_t n = PyList_Size(rows);
    for (Py_ssize_t k = 0; k < n; k++) {
        long r = PyLong_AsLong(PyList_GetItem(rows, k));
        if (r == -1 && PyErr_Occurred())
            goto fail;
        if (r < 0 || r >= columns) {
            PyErr_SetString(PyExc_IndexError, "a row outside the columns");
            goto fail;
        }
        int32_t nid = get_i(name, r);
        if (nid < 0 || nid >= names) {
            PyErr_SetString(PyExc_IndexError, "a name outside the names");
            goto fail;
        }
        set_i(out_data, nid, (int32_t)r);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

/* ---------------------------------------------------------------- innermost_lines */

static PyObject *innermost_lines(PyObject *module, PyObject *args) {
    PyObject *start_o, *end_o, *line_o, *times_o;
    if (!PyArg_ParseTuple(args, "OOOO", &start_o, &end_o, &line_o, &times_o))
        return NULL;
    PyObject *nodes = PyTuple_Pack(3, start_o, end_o, line_o);
    if (!nodes)
        return NULL;
    char *starts, *ends, *lines, *times, *out_data;
    Py_ssize_t n, m;
    int bad = node_columns(nodes, &starts, &ends, &lines, &n) || column(times_o, 0, 8, "times", &times, &m);
    Py_DECREF(nodes); /* the columns stay alive: the arguments hold them */
    if (bad)
        return NULL;
    Query *queries = malloc((size_t)(m + 1) * sizeof(Query));
    int32_t *found = malloc((size_t)(m + 1) * sizeof(int32_t));
    PyObject *out = NULL;
    if (!queries || !found) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t q = 0; q < m; q++)
        queries[q] = (Query){get_d(times, q), q};
    if (innermost_into(starts, ends, lines, n, queries, m, found))
        goto done;
    if ((out = new_bytes(m * 4, &out_data)))
        memcpy(out_data, found, (size_t)m * 4);
done:
    free(queries);
    free(found);
    return out;
}

/* ---------------------------------------------------------------- grouped */

typedef struct {
    int64_t key;
    double start;
    Py_ssize_t i;
} Keyed;

static int keyed_order(const void *pa, const void *pb) {
    const Keyed *a = pa, *b = pb;
    if (a->key != b->key)
        return a->key < b->key ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    return (a->i > b->i) - (a->i < b->i);
}

/* grouped without unions: sums in the order given, through an open-addressing table of keys */
static PyObject *grouped_sums(const char *key1, const char *key2, Py_ssize_t n2, const char *starts, const char *ends,
                              const char *select, Py_ssize_t n) {
    Py_ssize_t cap = 16;
    while (cap < 2 * n + 16)
        cap *= 2;
    int64_t *keys = malloc((size_t)cap * 8), *counts = calloc((size_t)cap, 8);
    double *sums = calloc((size_t)cap, 8);
    char *used = calloc((size_t)cap, 1);
    Keyed *order = NULL;
    PyObject *result = NULL;
    if (!keys || !counts || !sums || !used) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t distinct = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k1 = get_i(key1, i);
        if (k1 < 0 || (select && !select[i]))
            continue;
        int64_t key = key2 ? k1 * (int64_t)n2 + (int64_t)get_i(key2, i) + 1 : k1;
        size_t h = ((uint64_t)key * 0x9E3779B97F4A7C15ull) >> 17;
        size_t slot = h & (size_t)(cap - 1);
        while (used[slot] && keys[slot] != key)
            slot = (slot + 1) & (size_t)(cap - 1);
        if (!used[slot]) {
            used[slot] = 1;
            keys[slot] = key;
            distinct++;
        }
        counts[slot] += 1;
        sums[slot] += get_d(ends, i) - get_d(starts, i);
    }
    order = malloc((size_t)(distinct + 1) * sizeof(Keyed));
    if (!order) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t slot = 0; slot < cap; slot++)
        if (used[slot])
            order[m++] = (Keyed){keys[slot], 0.0, slot};
    qsort(order, (size_t)m, sizeof(Keyed), keyed_order);
    {
        char *o_keys, *o_counts, *o_sums, *o_unions;
        PyObject *parts[4] = {new_bytes(m * 8, &o_keys), new_bytes(m * 8, &o_counts), new_bytes(m * 8, &o_sums),
                              new_bytes(m * 8, &o_unions)};
        if (parts[0] && parts[1] && parts[2] && parts[3]) {
            memset(o_unions, 0, (size_t)m * 8);
            for (Py_ssize_t k = 0; k < m; k++) {
                Py_ssize_t slot = order[k].i;
                memcpy(o_keys + k * 8, &keys[slot], 8);
                memcpy(o_counts + k * 8, &counts[slot], 8);
                memcpy(o_sums + k * 8, &sums[slot], 8);
            }
            result = PyTuple_New(4);
        }
        for (int k = 0; k < 4; k++) {
            if (result)
                PyTuple_SetItem(result, k, parts[k]);
            else
                Py_XDECREF(parts[k]);
        }
    }
done:
    free(keys);
    free(counts);
    free(sums);
    free(used);
    free(order);
    return result;
}

static PyObject *grouped(PyObject *module, PyObject *args) {
    PyObject *key1_o, *key2_o, *start_o, *end_o, *select_o;
    Py_ssize_t n2;
    int unions = 1;
    if (!PyArg_ParseTuple(args, "OOnOOO|i", &key1_o, &key2_o, &n2, &start_o, &end_o, &select_o, &unions))
        return NULL;
    char *key1, *key2 = NULL, *starts, *ends, *select = NULL;
    Py_ssize_t n, n_key2 = 0, n_start, n_end, n_select = 0;
    if (column(key1_o, 0, 4, "key1", &key1, &n) || column(start_o, 0, 8, "starts", &starts, &n_start) ||
        column(end_o, 0, 8, "ends", &ends, &n_end) ||
        (key2_o != Py_None && column(key2_o, 0, 4, "key2", &key2, &n_key2)) ||
        (select_o != Py_None && column(select_o, 0, 1, "select", &select, &n_select)))
        return NULL;
    if (n_start != n || n_end != n || (key2 && n_key2 != n) || (select && n_select != n)) {
        PyErr_SetString(PyExc_ValueError, "the columns differ in length");
        return NULL;
    }
    if (!unions)
        return grouped_sums(key1, key2, n2, starts, ends, select, n);
    Keyed *order = malloc((size_t)(n + 1) * sizeof(Keyed));
    int64_t *o_keys = malloc((size_t)(n + 1) * 8), *o_counts = malloc((size_t)(n + 1) * 8);
    double *o_sums = malloc((size_t)(n + 1) * 8), *o_unions = malloc((size_t)(n + 1) * 8);
    PyObject *result = NULL;
    if (!order || !o_keys || !o_counts || !o_sums || !o_unions) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t m = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        int64_t k1 = get_i(key1, i);
        if (k1 < 0 || (select && !select[i]))
            continue;
        int64_t key = key2 ? k1 * (int64_t)n2 + (int64_t)get_i(key2, i) + 1 : k1;
        order[m++] = (Keyed){key, get_d(starts, i), i};
    }
    qsort(order, (size_t)m, sizeof(Keyed), keyed_order);
    Py_ssize_t g = 0;
    double covered = 0.0;
    for (Py_ssize_t k = 0; k < m; k++) {
        Py_ssize_t i = order[k].i;
        double s = get_d(starts, i), e = get_d(ends, i);
        if (!g || o_keys[g - 1] != order[k].key) {
            o_keys[g] = order[k].key;
            o_counts[g] = 0;
            o_sums[g] = 0.0;
            o_unions[g] = 0.0;
            g++;
            covered = -HUGE_VAL;
        }
        o_counts[g - 1] += 1;
        o_sums[g - 1] += e - s;
        if (s >= covered) {
            o_unions[g - 1] += e - s;
            covered = e;
        } else if (e > covered) {
            o_unions[g - 1] += e - covered;
            covered = e;
        }
    }
    result = Py_BuildValue("(y#y#y#y#)", (char *)o_keys, g * 8, (char *)o_counts, g * 8, (char *)o_sums, g * 8,
                           (char *)o_unions, g * 8);
done:
    free(order);
    free(o_keys);
    free(o_counts);
    free(o_sums);
    free(o_unions);
    return result;
}

/* ---------------------------------------------------------------- partition */

typedef struct {
    double t;
    int level, delta; /* level -1: a period bound */
} Change;

static int change_order(const void *pa, const void *pb) {
    const Change *a = pa, *b = pb;
    return (a->t > b->t) - (a->t < b->t);
}

static PyObject *partition(PyObject *module, PyObject *args) {
    PyObject *start_o, *end_o, *level_o, *bounds_o, *parent_o = Py_None;
    int n_levels;
    if (!PyArg_ParseTuple(args, "OOOiO|O", &start_o, &end_o, &level_o, &n_levels, &bounds_o, &parent_o))
        return NULL;
    char *starts, *ends, *levels, *bounds, *parents = NULL, *out_data;
    Py_ssize_t n, n_end, n_level, n_bounds, n_parent = 0;
    if (column(start_o, 0, 8, "starts", &starts, &n) || column(end_o, 0, 8, "ends", &ends, &n_end) ||
        column(level_o, 0, 1, "levels", &levels, &n_level) || column(bounds_o, 0, 8, "bounds", &bounds, &n_bounds) ||
        (parent_o != Py_None && column(parent_o, 0, 4, "parent", &parents, &n_parent)))
        return NULL;
    if (n_end != n || n_level != n || (parents && n_parent != n) || n_levels < 1 || n_levels > 64) {
        PyErr_SetString(PyExc_ValueError, "the columns differ in length, or the levels are not 1..64");
        return NULL;
    }
    Py_ssize_t periods = n_bounds > 1 ? n_bounds - 1 : 0;
    PyObject *out = new_bytes(periods * n_levels * 8, &out_data);
    if (!out)
        return NULL;
    memset(out_data, 0, (size_t)(periods * n_levels * 8));
    if (!periods)
        return out;
    Change *changes = malloc((size_t)(2 * n + n_bounds + 1) * sizeof(Change));
    if (!changes) {
        Py_DECREF(out);
        return PyErr_NoMemory();
    }
    Py_ssize_t c = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        double s = get_d(starts, i), e = get_d(ends, i);
        int level = (int)(unsigned char)levels[i];
        if (parents) { /* covered whole by its parent at a level no higher: it changes nothing */
            int32_t p = get_i(parents, i);
            if (p >= n) {
                free(changes);
                Py_DECREF(out);
                PyErr_SetString(PyExc_IndexError, "a parent outside the intervals");
                return NULL;
            }
            if (p >= 0 && (unsigned char)levels[p] <= (unsigned char)levels[i] && get_d(starts, p) <= s &&
                e <= get_d(ends, p))
                continue;
        }
        if (e > s && level < n_levels) { /* higher levels are not counted */
            changes[c++] = (Change){s, level, 1};
            changes[c++] = (Change){e, level, -1};
        }
    }
    for (Py_ssize_t i = 0; i < n_bounds; i++)
        changes[c++] = (Change){get_d(bounds, i), -1, 0};
    qsort(changes, (size_t)c, sizeof(Change), change_order);
    long active[64] = {0};
    double first = get_d(bounds, 0), last = get_d(bounds, n_bounds - 1), previous = 0.0;
    int have_previous = 0;
    Py_ssize_t period = 0;
    for (Py_ssize_t k = 0; k < c;) {
        double t = changes[k].t;
        if (have_previous && previous >= first && t <= last) {
            while (period < periods - 1 && get_d(bounds, period + 1) <= previous)
                period++;
            for (int level = 0; level < n_levels; level++)
                if (active[level] > 0) {
                    double *slot = (double *)(out_data + (size_t)(period * n_levels + level) * 8), v;
                    memcpy(&v, slot, 8);
                    v += t - previous;
                    memcpy(slot, &v, 8);
                    break;
                }
        }
        for (; k < c && changes[k].t == t; k++)
            if (changes[k].level >= 0)
                active[changes[k].level] += changes[k].delta;
        previous = t;
        have_previous = 1;
    }
    free(changes);
    return out;
}

/* ---------------------------------------------------------------- reduce_spans */

typedef struct {
    int32_t track, depth, parent, category, count, longest;
    double start, end, first_end, covered, busy, longest_us;
} Group;

typedef struct {
    int32_t track, index, count;
    int8_t category;
    double start, end, busy;
} Entry;

static int entry_order(const void *pa, const void *pb) {
    const Entry *a = pa, *b = pb;
    if (a->track != b->track)
        return a->track < b->track ? -1 : 1;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->end != b->end)
        return a->end > b->end ? -1 : 1;
    return (a->index > b->index) - (a->index < b->index);
}

typedef struct {
    Entry *items;
    Py_ssize_t n, cap;
} Entries;

static int push_entry(Entries *out, Entry e) {
    if (out->n == out->cap) {
        Py_ssize_t cap = out->cap ? 2 * out->cap : 1024;
        Entry *items = realloc(out->items, (size_t)cap * sizeof(Entry));
        if (!items)
            return -1;
        out->items = items;
        out->cap = cap;
    }
    out->items[out->n++] = e;
    return 0;
}

static int close_group(Entries *out, const Group *g) {
    if (g->count == 1 && g->end == g->first_end) /* one span, nothing of it outside it: shown as is */
        return push_entry(out, (Entry){g->track, g->longest, 0, (int8_t)g->category, g->start, g->end, g->end - g->start});
    return push_entry(out, (Entry){g->track, g->longest, g->count, (int8_t)g->category, g->start, g->end, g->busy});
}

static void fold(Group *g, double s, double e) {
    if (s >= g->covered) {
        g->busy += e - s;
        g->covered = e;
    } else if (e > g->covered) {
        g->busy += e - g->covered;
        g->covered = e;
    }
    if (e > g->end)
        g->end = e;
}

static PyObject *reduce_spans(PyObject *module, PyObject *args) {
    PyObject *start_o, *end_o, *track_o, *cat_o, *depth_o, *parent_o, *never_o;
    double a, b, resolution, widest;
    int keep_labelled, mixed, mixed_category;
    if (!PyArg_ParseTuple(args, "OOOOOOdddiiOid", &start_o, &end_o, &track_o, &cat_o, &depth_o, &parent_o, &a, &b,
                          &resolution, &keep_labelled, &mixed, &never_o, &mixed_category, &widest))
        return NULL;
    char *S, *E, *T, *C, *D, *P, *never;
    Py_ssize_t n, n_e, n_t, n_c, n_d, n_p, n_never;
    if (column(start_o, 0, 8, "start", &S, &n) || column(end_o, 0, 8, "end", &E, &n_e) ||
        column(track_o, 0, 4, "track", &T, &n_t) || column(cat_o, 0, 1, "category", &C, &n_c) ||
        column(depth_o, 0, 4, "depth", &D, &n_d) || column(parent_o, 0, 4, "parent", &P, &n_p) ||
        column(never_o, 0, 1, "never_merged", &never, &n_never))
        return NULL;
    if (n_e != n || n_t != n || n_c != n || n_d != n || n_p != n || n > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "the span columns differ in length");
        return NULL;
    }
    Entries out = {NULL, 0, 0};
    Group *groups = NULL;
    Py_ssize_t n_groups = 0, groups_cap = 0;
    int32_t *swallowed = malloc((size_t)(n + 1) * sizeof(int32_t)); /* span -> group, -1 */
    int32_t *open = NULL; /* depth -> open group on the current track, -1 */
    Py_ssize_t open_cap = 0, max_depth = -1;
    int32_t current = -1;
    PyObject *result = NULL;
    if (!swallowed)
        goto nomem;
    for (Py_ssize_t i = 0; i < n; i++)
        swallowed[i] = -1;
    for (Py_ssize_t i = 0; i < n; i++) {
        double s = get_d(S, i), e = get_d(E, i);
        if (!((s < b && e > a) || (s == e && a <= s && s <= b)))
            continue;
        s = s > a ? s : a;
        e = e < b ? e : b;
        int32_t t = get_i(T, i), c = (int32_t)(signed char)C[i];
        if (c < 0 || c >= n_never) {
            PyErr_SetString(PyExc_IndexError, "a category outside never_merged");
            goto done;
        }
        if (t != current) {
            for (Py_ssize_t d = 0; d <= max_depth; d++)
                if (open[d] >= 0) {
                    if (close_group(&out, &groups[open[d]]))
                        goto nomem;
                    open[d] = -1;
                }
            current = t;
        }
        if (resolution <= 0) {
            if (push_entry(&out, (Entry){t, (int32_t)i, 0, (int8_t)c, s, e, e - s}))
                goto nomem;
            continue;
        }
        int labelled = keep_labelled && never[c];
        int32_t p = get_i(P, i);
        if (p >= n || p < -1) {
            PyErr_SetString(PyExc_IndexError, "a parent outside the spans");
            goto done;
        }
        int32_t holder = p >= 0 ? swallowed[p] : -1;
        if (holder >= 0 && !labelled) { /* inside a span too short to show: its time is the merged span's */
            fold(&groups[holder], s, e);
            swallowed[i] = holder;
            continue;
        }
        int32_t d = get_i(D, i);
        if (d < 0) {
            PyErr_SetString(PyExc_ValueError, "a negative depth");
            goto done;
        }
        if (d >= open_cap) {
            Py_ssize_t cap = open_cap ? open_cap : 16;
            while (cap <= d)
                cap *= 2;
            int32_t *grown = realloc(open, (size_t)cap * sizeof(int32_t));
            if (!grown)
                goto nomem;
            for (Py_ssize_t k = open_cap; k < cap; k++)
                grown[k] = -1;
            open = grown;
            open_cap = cap;
        }
        if (d > max_depth)
            max_depth = d;
        int32_t g = open[d];
        if (labelled || e - s >= resolution) {
            if (g >= 0) {
                if (close_group(&out, &groups[g]))
                    goto nomem;
                open[d] = -1;
            }
            if (push_entry(&out, (Entry){t, (int32_t)i, 0, (int8_t)c, s, e, e - s}))
                goto nomem;
            continue;
        }
        Group *og = g >= 0 ? &groups[g] : NULL;
        if (og && og->parent == p && (og->category == c || mixed) && s - og->end < resolution && e - og->start <= widest) {
            og->count += 1;
            if (c != og->category)
                og->category = mixed_category;
            if (e - s > og->longest_us) {
                og->longest = (int32_t)i;
                og->longest_us = e - s;
            }
            fold(og, s, e);
        } else {
            if (og && close_group(&out, og))
                goto nomem;
            if (n_groups == groups_cap) {
                Py_ssize_t cap = groups_cap ? 2 * groups_cap : 1024;
                Group *grown = realloc(groups, (size_t)cap * sizeof(Group));
                if (!grown)
                    goto nomem;
                groups = grown;
                groups_cap = cap;
            }
            groups[n_groups] = (Group){t, d, p, c, 1, (int32_t)i, s, e, e, e, e - s, e - s};
            g = open[d] = (int32_t)n_groups++;
        }
        swallowed[i] = g;
    }
    for (Py_ssize_t d = 0; d <= max_depth; d++)
        if (open[d] >= 0 && close_group(&out, &groups[open[d]]))
            goto nomem;
    qsort(out.items, (size_t)out.n, sizeof(Entry), entry_order);
    {
        char *o_index, *o_start, *o_end, *o_count, *o_busy, *o_cat;
        PyObject *parts[6] = {new_bytes(out.n * 4, &o_index), new_bytes(out.n * 8, &o_start),
                              new_bytes(out.n * 8, &o_end), new_bytes(out.n * 4, &o_count),
                              new_bytes(out.n * 8, &o_busy), new_bytes(out.n, &o_cat)};
        int ok = 1;
        for (int k = 0; k < 6; k++)
            ok = ok && parts[k];
        if (ok) {
            for (Py_ssize_t k = 0; k < out.n; k++) {
                Entry *x = &out.items[k];
                set_i(o_index, k, x->index);
                memcpy(o_start + k * 8, &x->start, 8);
                memcpy(o_end + k * 8, &x->end, 8);
                set_i(o_count, k, x->count);
                memcpy(o_busy + k * 8, &x->busy, 8);
                o_cat[k] = (char)x->category;
            }
            result = PyTuple_New(6);
        }
        for (int k = 0; k < 6; k++) {
            if (result)
                PyTuple_SetItem(result, k, parts[k]);
            else
                Py_XDECREF(parts[k]);
        }
    }
    goto done;
nomem:
    PyErr_NoMemory();
done:
    free(out.items);
    free(groups);
    free(swallowed);
    free(open);
    return result;
}

/* ---------------------------------------------------------------- rounded, longest_at */

static PyObject *rounded(PyObject *module, PyObject *args) {
    PyObject *values_o, *others_o;
    double origin;
    if (!PyArg_ParseTuple(args, "OdO", &values_o, &origin, &others_o))
        return NULL;
    char *values, *others = NULL, *out_data;
    Py_ssize_t n, n_others = 0;
    if (column(values_o, 0, 8, "values", &values, &n) ||
        (others_o != Py_None && column(others_o, 0, 8, "others", &others, &n_others)))
        return NULL;
    if (others && n_others != n) {
        PyErr_SetString(PyExc_ValueError, "the columns differ in length");
        return NULL;
    }
    PyObject *out = new_bytes(n * 8, &out_data);
    if (!out)
        return NULL;
    for (Py_ssize_t i = 0; i < n; i++) {
        double scaled = (get_d(values, i) - (others ? get_d(others, i) : origin)) * 1000.0;
        double whole = floor(fabs(scaled) + 0.5); /* half away from zero, as the reference */
        double v = (scaled >= 0 ? whole : -whole) / 1000.0;
        memcpy(out_data + i * 8, &v, 8);
    }
    return out;
}

static PyObject *longest_at(PyObject *module, PyObject *args) {
    PyObject *start_o, *end_o;
    Py_ssize_t k;
    if (!PyArg_ParseTuple(args, "OOn", &start_o, &end_o, &k))
        return NULL;
    char *starts, *ends;
    Py_ssize_t n, n_end;
    if (column(start_o, 0, 8, "starts", &starts, &n) || column(end_o, 0, 8, "ends", &ends, &n_end))
        return NULL;
    if (n_end != n) {
        PyErr_SetString(PyExc_ValueError, "the columns differ in length");
        return NULL;
    }
    if (k < 0 || k >= n)
        return PyFloat_FromDouble(0.0);
    double *v = malloc((size_t)(n + 1) * sizeof(double));
    if (!v)
        return PyErr_NoMemory();
    for (Py_ssize_t i = 0; i < n; i++)
        v[i] = get_d(ends, i) - get_d(starts, i);
    /* quickselect (descending): the value at rank k is the same whatever the order of equal values */
    Py_ssize_t lo = 0, hi = n - 1;
    while (lo < hi) {
        double pivot = v[lo + (hi - lo) / 2];
        Py_ssize_t i = lo, j = hi;
        while (i <= j) {
            while (v[i] > pivot)
                i++;
            while (v[j] < pivot)
                j--;
            if (i <= j) {
                double tmp = v[i];
                v[i] = v[j];
                v[j] = tmp;
                i++;
                j--;
            }
        }
        if (k <= j)
            hi = j;
        else if (k >= i)
            lo = i;
        else
            break;
    }
    double found = v[k];
    free(v);
    return PyFloat_FromDouble(found);
}

static PyMethodDef methods[] = {
    {"layout_track", layout_track, METH_VARARGS, "One track's spans: order, times, depth, parent, line, category, own."},
    {"examples", examples, METH_VARARGS, "One row of each name among the rows."},
    {"innermost_lines", innermost_lines, METH_VARARGS, "The line of the innermost node open at each time."},
    {"grouped", grouped, METH_VARARGS, "Per key: count, sum of lengths, union length."},
    {"partition", partition, METH_VARARGS, "Time per period at the lowest active level."},
    {"reduce_spans", reduce_spans, METH_VARARGS, "The spans of a range, clipped, reduced at a resolution."},
    {"rounded", rounded, METH_VARARGS, "Values less an origin (or less other values), rounded to 1/1000."},
    {"longest_at", longest_at, METH_VARARGS, "The k-th longest interval."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_timeline", "Compiled kernels of stepscope.analysis.timeline_kernels.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__timeline(void) { return PyModule_Create(&module_def); }
