/* The compiled kernels of nesting.py: one thread's operators in order, and how they nest, in one pass
 * over the trace's ts and dur columns; and their self times summed by name and line. nesting.py
 * states the invariants; its Python is the reference these follow step for step (the same order,
 * the same float operations in the same order), so the results are identical.
 *
 * Built against the stable ABI (3.10+), like the column scanner: the columns arrive as bytes
 * (array.tobytes(); the buffer protocol joined the stable ABI only in 3.11).
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* rows[k] as a row number of the columns; -1 with an exception set when it is not one. */
static long row_at(PyObject *rows, Py_ssize_t k, Py_ssize_t columns) {
    long row = PyLong_AsLong(PyList_GetItem(rows, k));
    if (row == -1 && PyErr_Occurred())
        return -1;
    if (row < 0 || row >= columns) {
        PyErr_SetString(PyExc_IndexError, "a row outside the columns");
        return -1;
    }
    return row;
}

/* One op to order: its sort key (start, -duration, position given) and its row. */
typedef struct {
    double start, neg_dur;
    Py_ssize_t pos;
    long row;
} Op;

static int op_order(const void *pa, const void *pb) {
    const Op *a = pa, *b = pb;
    if (a->start != b->start)
        return a->start < b->start ? -1 : 1;
    if (a->neg_dur != b->neg_dur)
        return a->neg_dur < b->neg_dur ? -1 : 1;
    return (a->pos > b->pos) - (a->pos < b->pos);
}

/* nest_rows(rows, ts_bytes, dur_bytes, parent) -> (rows, starts, ends, own), ops in nesting order;
 * writes each op's parent row (int32) into the bytearray `parent` at the op's row. */
static PyObject *nest_rows(PyObject *module, PyObject *args) {
    PyObject *rows, *ts_bytes, *dur_bytes, *parent_bytes;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &rows, &PyBytes_Type, &ts_bytes, &PyBytes_Type, &dur_bytes,
                          &PyByteArray_Type, &parent_bytes))
        return NULL;
    Py_ssize_t n = PyList_Size(rows);
    Py_ssize_t columns = PyBytes_Size(ts_bytes) / (Py_ssize_t)sizeof(double);
    if (PyBytes_Size(dur_bytes) / (Py_ssize_t)sizeof(double) != columns) {
        PyErr_SetString(PyExc_ValueError, "ts and dur columns differ in length");
        return NULL;
    }
    if (PyByteArray_Size(parent_bytes) != columns * (Py_ssize_t)sizeof(int32_t) || columns > INT32_MAX) {
        PyErr_SetString(PyExc_ValueError, "the parent column must hold one int32 per row");
        return NULL;
    }
    const char *ts_data = PyBytes_AsString(ts_bytes), *dur_data = PyBytes_AsString(dur_bytes);
    char *parent = PyByteArray_AsString(parent_bytes);
    /* positions 0..n-1 are the ops in nesting order, n the sentinel that holds every op */
    Op *ops = malloc((size_t)(n + 1) * sizeof(Op));
    double *end = malloc((size_t)(n + 1) * sizeof(double));
    double *own = malloc((size_t)(n + 1) * sizeof(double));
    Py_ssize_t *stack = malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    PyObject *rows_out = NULL, *starts_out = NULL, *ends_out = NULL, *own_out = NULL, *result = NULL;
    if (!ops || !end || !own || !stack) {
        PyErr_NoMemory();
        goto done;
    }
    int in_order = 1;
    for (Py_ssize_t k = 0; k < n; k++) {
        long r = row_at(rows, k, columns);
        if (r < 0)
            goto done;
        double s, d;
        memcpy(&s, ts_data + (size_t)r * sizeof(double), sizeof(double));
        memcpy(&d, dur_data + (size_t)r * sizeof(double), sizeof(double));
        ops[k] = (Op){s, -d, k, r};
        if (k && in_order && op_order(&ops[k - 1], &ops[k]) > 0)
            in_order = 0;
    }
    if (!in_order) /* the key is total (ties end at the position given), so any sort gives one order */
        qsort(ops, (size_t)n, sizeof(Op), op_order);
    for (Py_ssize_t k = 0; k < n; k++) {
        own[k] = -ops[k].neg_dur;
        end[k] = ops[k].start + own[k];
    }
    ops[n].row = -1;
    end[n] = INFINITY;
    own[n] = 0.0;
    Py_ssize_t depth = 0, top = n;
    stack[depth++] = n;
    for (Py_ssize_t k = 0; k < n; k++) {
        while (end[top] <= ops[k].start)
            top = stack[--depth - 1];
        if (end[top] >= end[k]) {
            int32_t up = (int32_t)ops[top].row;
            memcpy(parent + (size_t)ops[k].row * sizeof(int32_t), &up, sizeof(int32_t));
            own[top] -= -ops[k].neg_dur; /* op k's duration: its own children come after it */
        }
        stack[depth++] = k;
        top = k;
    }
    rows_out = PyList_New(n);
    starts_out = PyList_New(n);
    ends_out = PyList_New(n);
    own_out = PyList_New(n);
    if (!rows_out || !starts_out || !ends_out || !own_out)
        goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *a = PyLong_FromLong(ops[k].row), *b = PyFloat_FromDouble(ops[k].start);
        PyObject *c = PyFloat_FromDouble(end[k]), *d = PyFloat_FromDouble(own[k]);
        if (!a || !b || !c || !d) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            Py_XDECREF(c);
            Py_XDECREF(d);
            goto done;
        }
        PyList_SetItem(rows_out, k, a); /* each steals its reference */
        PyList_SetItem(starts_out, k, b);
        PyList_SetItem(ends_out, k, c);
        PyList_SetItem(own_out, k, d);
    }
    result = PyTuple_Pack(4, rows_out, starts_out, ends_out, own_out);
done:
    Py_XDECREF(rows_out);
    Py_XDECREF(starts_out);
    Py_XDECREF(ends_out);
    Py_XDECREF(own_out);
    free(ops);
    free(end);
    free(own);
    free(stack);
    return result;
}

/* dict[key] = dict.get(key, zero) + amount, as the reference writes it (the same number types, so
 * the same float additions). */
static int add_into(PyObject *dict, PyObject *key, PyObject *amount, PyObject *zero) {
    PyObject *held = PyDict_GetItemWithError(dict, key); /* borrowed */
    if (!held && PyErr_Occurred())
        return -1;
    PyObject *value = PyNumber_Add(held ? held : zero, amount);
    int done = value ? PyDict_SetItem(dict, key, value) : -1;
    Py_XDECREF(value);
    return done;
}

/* add_self_times(times, counts, names, rows, own, lines, no_line): the twin of
 * nesting.add_self_times_reference; `names` is the name column as int32 bytes. */
static PyObject *add_self_times(PyObject *module, PyObject *args) {
    PyObject *times, *counts, *names_bytes, *rows, *own, *lines, *no_line;
    if (!PyArg_ParseTuple(args, "O!O!O!O!O!O!O", &PyDict_Type, &times, &PyDict_Type, &counts, &PyBytes_Type,
                          &names_bytes, &PyList_Type, &rows, &PyList_Type, &own, &PyList_Type, &lines, &no_line))
        return NULL;
    Py_ssize_t n = PyList_Size(rows);
    if (PyList_Size(own) != n || PyList_Size(lines) != n) {
        PyErr_SetString(PyExc_ValueError, "rows, own and lines differ in length");
        return NULL;
    }
    const char *names = PyBytes_AsString(names_bytes);
    Py_ssize_t columns = PyBytes_Size(names_bytes) / (Py_ssize_t)sizeof(int32_t);
    PyObject *last_line = NULL, *last_key = NULL; /* consecutive ops mostly share a line: its key, held */
    PyObject *result = NULL;
    PyObject *zero_float = PyFloat_FromDouble(0.0), *zero_int = PyLong_FromLong(0), *one = PyLong_FromLong(1);
    PyObject *key_attr = PyUnicode_InternFromString("key");
    if (!zero_float || !zero_int || !one || !key_attr)
        goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        long row = row_at(rows, k, columns);
        if (row < 0)
            goto done;
        PyObject *us = PyList_GetItem(own, k); /* borrowed */
        int negative = PyObject_RichCompareBool(us, zero_float, Py_LT);
        if (negative < 0)
            goto done;
        if (negative)
            us = zero_float;
        PyObject *line = PyList_GetItem(lines, k);
        if (line != last_line) {
            PyObject *line_key = line == Py_None ? (Py_INCREF(no_line), no_line) : PyObject_GetAttr(line, key_attr);
            if (!line_key)
                goto done;
            Py_XDECREF(last_key);
            last_key = line_key;
            last_line = line; /* borrowed: the list holds it */
        }
        int32_t nid;
        memcpy(&nid, names + (size_t)row * sizeof(int32_t), sizeof(int32_t));
        PyObject *name_id = PyLong_FromLong(nid);
        PyObject *key = name_id ? PyTuple_Pack(2, name_id, last_key) : NULL;
        int failed = !key || add_into(times, key, us, zero_float) < 0 || add_into(counts, key, one, zero_int) < 0;
        Py_XDECREF(key);
        Py_XDECREF(name_id);
        if (failed)
            goto done;
    }
    result = Py_None;
    Py_INCREF(result);
done:
    Py_XDECREF(last_key);
    Py_XDECREF(zero_float);
    Py_XDECREF(zero_int);
    Py_XDECREF(one);
    Py_XDECREF(key_attr);
    return result;
}

static PyMethodDef methods[] = {
    {"nest_rows", nest_rows, METH_VARARGS,
     "nest_rows(rows, ts_bytes, dur_bytes, parent) -> (rows, starts, ends, own), writing parents into parent"},
    {"add_self_times", add_self_times, METH_VARARGS,
     "add_self_times(times, counts, names, rows, own, lines, no_line): see nesting.add_self_times"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_nesting", "Compiled kernel of stepscope.analysis.nesting (see _nesting.c).", 0, methods,
};

PyMODINIT_FUNC PyInit__nesting(void) { return PyModule_Create(&module_def); }
