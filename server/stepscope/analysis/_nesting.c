/* The compiled kernel of nesting.py: how one thread's operators nest, in one pass over the trace's
 * ts and dur columns. nesting.py states the invariants; its loop is the reference this follows step
 * for step (the same float operations in the same order), so the results are identical.
 *
 * Built against the stable ABI (3.10+), like the column scanner: the columns arrive as bytes
 * (array.tobytes(); the buffer protocol joined the stable ABI only in 3.11).
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* nest_rows(rows, ts_bytes, dur_bytes) -> (starts, ends, up, own) */
static PyObject *nest_rows(PyObject *module, PyObject *args) {
    PyObject *rows, *ts_bytes, *dur_bytes;
    if (!PyArg_ParseTuple(args, "O!O!O!", &PyList_Type, &rows, &PyBytes_Type, &ts_bytes, &PyBytes_Type, &dur_bytes))
        return NULL;
    Py_ssize_t n = PyList_Size(rows);
    Py_ssize_t columns = PyBytes_Size(ts_bytes) / (Py_ssize_t)sizeof(double);
    if (PyBytes_Size(dur_bytes) / (Py_ssize_t)sizeof(double) != columns) {
        PyErr_SetString(PyExc_ValueError, "ts and dur columns differ in length");
        return NULL;
    }
    const char *ts_data = PyBytes_AsString(ts_bytes), *dur_data = PyBytes_AsString(dur_bytes);
    /* positions 0..n-1 are the ops, n the sentinel that holds every op */
    long *row = malloc((size_t)(n + 1) * sizeof(long));
    double *start = malloc((size_t)(n + 1) * sizeof(double));
    double *end = malloc((size_t)(n + 1) * sizeof(double));
    double *own = malloc((size_t)(n + 1) * sizeof(double));
    Py_ssize_t *stack = malloc((size_t)(n + 1) * sizeof(Py_ssize_t));
    long *up = malloc((size_t)(n + 1) * sizeof(long));
    PyObject *starts_out = NULL, *ends_out = NULL, *up_out = NULL, *own_out = NULL, *result = NULL;
    if (!row || !start || !end || !own || !stack || !up) {
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
        double s, d;
        memcpy(&s, ts_data + (size_t)r * sizeof(double), sizeof(double));
        memcpy(&d, dur_data + (size_t)r * sizeof(double), sizeof(double));
        row[k] = r;
        start[k] = s;
        own[k] = d;
        end[k] = s + d;
        up[k] = -1;
    }
    row[n] = -1;
    end[n] = INFINITY;
    own[n] = 0.0;
    Py_ssize_t depth = 0, top = n;
    stack[depth++] = n;
    for (Py_ssize_t k = 0; k < n; k++) {
        while (end[top] <= start[k])
            top = stack[--depth - 1];
        if (end[top] >= end[k]) {
            up[k] = row[top];
            own[top] -= own[k]; /* op k's duration: its own children come after it */
        }
        stack[depth++] = k;
        top = k;
    }
    starts_out = PyList_New(n);
    ends_out = PyList_New(n);
    up_out = PyList_New(n);
    own_out = PyList_New(n);
    if (!starts_out || !ends_out || !up_out || !own_out)
        goto done;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *a = PyFloat_FromDouble(start[k]), *b = PyFloat_FromDouble(end[k]);
        PyObject *c = PyLong_FromLong(up[k]), *d = PyFloat_FromDouble(own[k]);
        if (!a || !b || !c || !d) {
            Py_XDECREF(a);
            Py_XDECREF(b);
            Py_XDECREF(c);
            Py_XDECREF(d);
            goto done;
        }
        PyList_SetItem(starts_out, k, a); /* each steals its reference */
        PyList_SetItem(ends_out, k, b);
        PyList_SetItem(up_out, k, c);
        PyList_SetItem(own_out, k, d);
    }
    result = PyTuple_Pack(4, starts_out, ends_out, up_out, own_out);
done:
    Py_XDECREF(starts_out);
    Py_XDECREF(ends_out);
    Py_XDECREF(up_out);
    Py_XDECREF(own_out);
    free(row);
    free(start);
    free(end);
    free(own);
    free(stack);
    free(up);
    return result;
}

static PyMethodDef methods[] = {
    {"nest_rows", nest_rows, METH_VARARGS, "nest_rows(rows, ts_bytes, dur_bytes) -> (starts, ends, up, own)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_nesting", "Compiled kernel of stepscope.analysis.nesting (see _nesting.c).", 0, methods,
};

PyMODINIT_FUNC PyInit__nesting(void) { return PyModule_Create(&module_def); }
