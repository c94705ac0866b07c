/* Row indexes over a trace's columns: the compiled twins of `Trace.rows`, `Trace.rows_named` and
 * `Trace.rows_overlapping` (model.py), whose Python is the reference and gives the same rows in the
 * same order.
 *
 * The analysis asks which rows have a kind or a name many times; in Python each question is a
 * pass over every row (tens of milliseconds at a few hundred thousand rows), here it is a pass in C.
 *
 * Invariants:
 * - Rows come out in file order (ascending), as row numbers of the column given.
 * - A value outside the table (a name id beyond `wanted`, a negative id) is never wanted.
 * - Built against the stable ABI (3.10+), like the column scanner: columns arrive as bytes
 *   (array.tobytes(); the buffer protocol joined the stable ABI only in 3.11).
 */
#define Py_LIMITED_API 0x030A0000
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static double double_at(const char *column, Py_ssize_t row) {
    double value;
    memcpy(&value, column + (size_t)row * sizeof(double), sizeof(double));
    return value;
}

static int32_t int32_at(const char *column, Py_ssize_t row) {
    int32_t value;
    memcpy(&value, column + (size_t)row * sizeof(int32_t), sizeof(int32_t));
    return value;
}

/* rows_in(ids, wanted) -> [row, ...] where 0 <= ids[row] < len(wanted) and wanted[ids[row]] != 0.
 * `ids` holds native int32 values (an array("i") column), `wanted` one byte per id. */
static PyObject *rows_in(PyObject *module, PyObject *args) {
    PyObject *ids_bytes, *wanted_bytes;
    if (!PyArg_ParseTuple(args, "O!O!", &PyBytes_Type, &ids_bytes, &PyBytes_Type, &wanted_bytes))
        return NULL;
    const char *ids = PyBytes_AsString(ids_bytes);
    const unsigned char *wanted = (const unsigned char *)PyBytes_AsString(wanted_bytes);
    Py_ssize_t n = PyBytes_Size(ids_bytes) / (Py_ssize_t)sizeof(int32_t);
    uint32_t n_wanted = (uint32_t)PyBytes_Size(wanted_bytes);
    /* two passes: count, then fill a list of exactly that size */
    Py_ssize_t found = 0;
    for (Py_ssize_t row = 0; row < n; row++) {
        int32_t id = int32_at(ids, row);
        found += (uint32_t)id < n_wanted && wanted[id]; /* a negative id wraps past the table */
    }
    PyObject *out = PyList_New(found);
    if (!out)
        return NULL;
    Py_ssize_t k = 0;
    for (Py_ssize_t row = 0; row < n && k < found; row++) {
        int32_t id = int32_at(ids, row);
        if ((uint32_t)id < n_wanted && wanted[id]) {
            PyObject *number = PyLong_FromSsize_t(row);
            if (!number) {
                Py_DECREF(out);
                return NULL;
            }
            PyList_SetItem(out, k++, number); /* steals the reference */
        }
    }
    return out;
}

/* rows_by_kind(kinds) -> {kind: int32 row numbers as bytes}, kinds in ascending order.
 * `kinds` holds one byte per row (an array("b") column, read as unsigned like bytes are). */
static PyObject *rows_by_kind(PyObject *module, PyObject *arg) {
    if (!PyBytes_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "rows_by_kind() takes the kind column as bytes");
        return NULL;
    }
    const unsigned char *kinds = (const unsigned char *)PyBytes_AsString(arg);
    Py_ssize_t n = PyBytes_Size(arg);
    if (n > INT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "more rows than int32 row numbers hold");
        return NULL;
    }
    Py_ssize_t count[256] = {0};
    for (Py_ssize_t row = 0; row < n; row++)
        count[kinds[row]]++;
    PyObject *out = PyDict_New();
    if (!out)
        return NULL;
    int32_t *rows[256] = {NULL}; /* each kind's rows: the data of its bytes object, filled below */
    for (int kind = 0; kind < 256; kind++) {
        if (!count[kind])
            continue;
        PyObject *data = PyBytes_FromStringAndSize(NULL, count[kind] * (Py_ssize_t)sizeof(int32_t));
        PyObject *key = data ? PyLong_FromLong(kind) : NULL;
        int added = key ? PyDict_SetItem(out, key, data) : -1;
        Py_XDECREF(key);
        Py_XDECREF(data); /* the dict holds it */
        if (added < 0) {
            Py_DECREF(out);
            return NULL;
        }
        rows[kind] = (int32_t *)PyBytes_AsString(data);
        count[kind] = 0; /* from here: how many of its rows are written */
    }
    for (Py_ssize_t row = 0; row < n; row++) {
        unsigned char kind = kinds[row];
        int32_t number = (int32_t)row;
        memcpy(rows[kind] + count[kind]++, &number, sizeof(int32_t));
    }
    return out;
}

/* rows_overlapping(rows, ts, dur, lo, hi, tracks, skip_tracks, names, skip_names)
 *   -> {track: [row, ...]}: the `rows` (int32) with ts <= hi and ts + dur >= lo whose track and name
 *   ids (int32 columns) have a zero byte in skip_tracks / skip_names (ids beyond them are kept);
 *   tracks in the order of their first row, rows in the order given. */
static PyObject *rows_overlapping(PyObject *module, PyObject *args) {
    PyObject *rows_b, *ts_b, *dur_b, *tracks_b, *skip_tracks_b, *names_b, *skip_names_b;
    double lo, hi;
    if (!PyArg_ParseTuple(args, "O!O!O!ddO!O!O!O!", &PyBytes_Type, &rows_b, &PyBytes_Type, &ts_b, &PyBytes_Type, &dur_b,
                          &lo, &hi, &PyBytes_Type, &tracks_b, &PyBytes_Type, &skip_tracks_b, &PyBytes_Type, &names_b,
                          &PyBytes_Type, &skip_names_b))
        return NULL;
    Py_ssize_t n_rows = PyBytes_Size(rows_b) / (Py_ssize_t)sizeof(int32_t);
    Py_ssize_t columns = PyBytes_Size(ts_b) / (Py_ssize_t)sizeof(double);
    if (PyBytes_Size(dur_b) / (Py_ssize_t)sizeof(double) != columns ||
        PyBytes_Size(tracks_b) / (Py_ssize_t)sizeof(int32_t) != columns ||
        PyBytes_Size(names_b) / (Py_ssize_t)sizeof(int32_t) != columns) {
        PyErr_SetString(PyExc_ValueError, "the columns differ in length");
        return NULL;
    }
    const char *rows = PyBytes_AsString(rows_b), *tracks = PyBytes_AsString(tracks_b), *names = PyBytes_AsString(names_b);
    const char *ts_data = PyBytes_AsString(ts_b), *dur_data = PyBytes_AsString(dur_b);
    const unsigned char *skip_tracks = (const unsigned char *)PyBytes_AsString(skip_tracks_b);
    const unsigned char *skip_names = (const unsigned char *)PyBytes_AsString(skip_names_b);
    uint32_t n_skip_tracks = (uint32_t)PyBytes_Size(skip_tracks_b), n_skip_names = (uint32_t)PyBytes_Size(skip_names_b);
    PyObject *out = PyDict_New();
    if (!out)
        return NULL;
    PyObject *last_list = NULL; /* borrowed from the dict: consecutive rows mostly share a track */
    int32_t last_track = 0;
    for (Py_ssize_t k = 0; k < n_rows; k++) {
        int32_t row = int32_at(rows, k);
        if (row < 0 || row >= columns) {
            PyErr_SetString(PyExc_IndexError, "a row outside the columns");
            goto fail;
        }
        double ts = double_at(ts_data, row), dur = double_at(dur_data, row);
        if (!(ts <= hi && ts + dur >= lo))
            continue;
        int32_t track = int32_at(tracks, row), name = int32_at(names, row);
        if (((uint32_t)track < n_skip_tracks && skip_tracks[track]) || ((uint32_t)name < n_skip_names && skip_names[name]))
            continue;
        if (!last_list || track != last_track) {
            PyObject *key = PyLong_FromLong(track);
            if (!key)
                goto fail;
            PyObject *list = PyDict_GetItemWithError(out, key); /* borrowed */
            if (!list) {
                if (PyErr_Occurred() || !(list = PyList_New(0)) || PyDict_SetItem(out, key, list) < 0) {
                    Py_XDECREF(list);
                    Py_DECREF(key);
                    goto fail;
                }
                Py_DECREF(list); /* the dict holds it */
            }
            Py_DECREF(key); /* the dict holds its own */
            last_list = list;
            last_track = track;
        }
        PyObject *number = PyLong_FromLong(row);
        if (!number || PyList_Append(last_list, number) < 0) {
            Py_XDECREF(number);
            goto fail;
        }
        Py_DECREF(number);
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyMethodDef methods[] = {
    {"rows_in", rows_in, METH_VARARGS, "rows_in(ids, wanted) -> rows whose int32 id has a nonzero byte in wanted"},
    {"rows_by_kind", rows_by_kind, METH_O, "rows_by_kind(kinds) -> {kind: int32 rows as bytes}, by ascending kind"},
    {"rows_overlapping", rows_overlapping, METH_VARARGS,
     "rows_overlapping(rows, ts, dur, lo, hi, tracks, skip_tracks, names, skip_names) -> {track: [row, ...]}"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_def = {
    PyModuleDef_HEAD_INIT, "_rows", "Compiled row indexes of stepscope.trace.model (see _rows.c).", 0, methods,
};

PyMODINIT_FUNC PyInit__rows(void) { return PyModule_Create(&module_def); }
