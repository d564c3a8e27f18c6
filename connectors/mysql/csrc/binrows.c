/* The compiled module _binrows (connectors/mysql/compiled_rows.py): the rows of a binlog rows event, decoded from
   the event's body as python-mysql-replication's RowsEvent decodes them (the same values, the same dicts) for the
   column kinds compiled_rows.py lists; a table with any other type is left to the library
   (tests/mariadb/test_compiled_rows.py compares the two on real binlog events). And a row's JSON text from those
   values, as envelope.TableEvents writes it in Python (tests/mariadb/test_compiled_rows.py too). And the rows of a
   SELECT's text-protocol result set (textrows.c). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "decimal_text.h"
#include "json_text.h"
#include "textrows.h"

static PyObject *decimal_type; /* decimal.Decimal */

/* Column kinds (compiled_rows.py) */
enum {
    INT8 = 0, UINT8, INT16, UINT16, INT24, UINT24, INT32, UINT32, INT64, UINT64, FLOAT, DOUBLE, STRING, YEAR,
    DATE, DATETIME2, TIMESTAMP2, TIME2, NEWDECIMAL
};

typedef struct {
    PyObject *name;     /* borrowed from the layout */
    int kind;
    int size;           /* STRING: bytes of the length prefix; temporals: fsp; NEWDECIMAL: precision */
    int scale;          /* NEWDECIMAL */
    const char *encoding; /* STRING: Python codec, NULL for bytes */
    int utf8;
} Column;

/* A value the library decodes to None with a reason the reader turns into ZERO_DATE (a zero or invalid date): the
   event goes to the library, which keeps its own bookkeeping of those reasons. */
static PyObject *for_the_library(void) {
    PyErr_SetString(PyExc_ValueError, "a value the library decodes");
    return NULL;
}

static uint64_t big(const unsigned char *p, int n) {
    uint64_t value = 0;
    for (int i = 0; i < n; i++) value = (value << 8) | p[i];
    return value;
}

/* The fraction of a temporal value, as the library's __read_fsp reads it: (fsp + 1) / 2 big-endian bytes. */
static long fraction(const unsigned char *p, int fsp) {
    int bytes = (fsp + 1) / 2;
    if (bytes == 0) return 0;
    long value = (long)big(p, bytes);
    if (fsp % 2) value /= 10;
    for (int i = fsp; i < 6; i++) value *= 10;
    return value;
}

static PyObject *decimal_of(const unsigned char *p, int precision, int scale) {
    static const int compressed[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
    int integral = precision - scale;
    int whole_integral = integral / 9, whole_fraction = scale / 9;
    int lead = compressed[integral - whole_integral * 9], tail = compressed[scale - whole_fraction * 9];
    int length = lead + 4 * (whole_integral + whole_fraction) + tail;
    unsigned char bytes[64];
    if (length > (int)sizeof(bytes)) return for_the_library();
    memcpy(bytes, p, (size_t)length);
    int negative = !(bytes[0] & 0x80);
    bytes[0] ^= 0x80;
    uint32_t mask = negative ? 0xFFFFFFFFu : 0;
    char text[160];
    int at = 0;
    if (negative) text[at++] = '-';
    const unsigned char *q = bytes;
    if (lead) {
        uint32_t value = ((uint32_t)big(q, lead) ^ mask) & (lead == 4 ? 0xFFFFFFFFu : ((1u << (8 * lead)) - 1));
        at += snprintf(text + at, sizeof(text) - (size_t)at, "%u", value);
        q += lead;
    }
    for (int i = 0; i < whole_integral; i++, q += 4)
        at += snprintf(text + at, sizeof(text) - (size_t)at, "%09u", (uint32_t)big(q, 4) ^ mask);
    text[at++] = '.';
    for (int i = 0; i < whole_fraction; i++, q += 4)
        at += snprintf(text + at, sizeof(text) - (size_t)at, "%09u", (uint32_t)big(q, 4) ^ mask);
    if (tail) {
        uint32_t value = ((uint32_t)big(q, tail) ^ mask) & (tail == 4 ? 0xFFFFFFFFu : ((1u << (8 * tail)) - 1));
        at += snprintf(text + at, sizeof(text) - (size_t)at, "%0*u", scale - whole_fraction * 9, value);
    }
    return PyObject_CallFunction(decimal_type, "s#", text, (Py_ssize_t)at);
}

static int decimal_length(int precision, int scale) {
    static const int compressed[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
    int integral = precision - scale;
    return compressed[integral % 9] + 4 * (integral / 9 + scale / 9) + compressed[scale % 9];
}

typedef struct {
    const unsigned char *data;
    Py_ssize_t length;
    Py_ssize_t pos;
} Reader;

static int truncated(void) {
    PyErr_SetString(PyExc_ValueError, "the rows event ends inside a row");
    return -1;
}

static int need(Reader *in, Py_ssize_t n) {
    return in->length - in->pos < n ? truncated() : 0;
}

static uint64_t little(const unsigned char *p, int n) {
    uint64_t value = 0;
    for (int i = n - 1; i >= 0; i--) value = (value << 8) | p[i];
    return value;
}

static PyObject *value_of(Reader *in, const Column *column) {
    const unsigned char *p = in->data + in->pos;
    switch (column->kind) {
    case INT8: if (need(in, 1)) return NULL; in->pos += 1; return PyLong_FromLong((int8_t)p[0]);
    case UINT8: if (need(in, 1)) return NULL; in->pos += 1; return PyLong_FromLong(p[0]);
    case YEAR: if (need(in, 1)) return NULL; in->pos += 1; return PyLong_FromLong(p[0] + 1900);
    case INT16: if (need(in, 2)) return NULL; in->pos += 2; return PyLong_FromLong((int16_t)little(p, 2));
    case UINT16: if (need(in, 2)) return NULL; in->pos += 2; return PyLong_FromLong((long)little(p, 2));
    case INT24: {
        if (need(in, 3)) return NULL;
        in->pos += 3;
        long value = (long)little(p, 3);
        return PyLong_FromLong(value >= 0x800000 ? value - 0x1000000 : value);
    }
    case UINT24: if (need(in, 3)) return NULL; in->pos += 3; return PyLong_FromLong((long)little(p, 3));
    case INT32: if (need(in, 4)) return NULL; in->pos += 4; return PyLong_FromLong((int32_t)little(p, 4));
    case UINT32: if (need(in, 4)) return NULL; in->pos += 4; return PyLong_FromUnsignedLong((unsigned long)little(p, 4));
    case INT64: if (need(in, 8)) return NULL; in->pos += 8; return PyLong_FromLongLong((int64_t)little(p, 8));
    case UINT64: if (need(in, 8)) return NULL; in->pos += 8; return PyLong_FromUnsignedLongLong(little(p, 8));
    case FLOAT: {
        if (need(in, 4)) return NULL;
        in->pos += 4;
        uint32_t bits = (uint32_t)little(p, 4);
        float value;
        memcpy(&value, &bits, 4);
        return PyFloat_FromDouble((double)value);
    }
    case DOUBLE: {
        if (need(in, 8)) return NULL;
        in->pos += 8;
        uint64_t bits = little(p, 8);
        double value;
        memcpy(&value, &bits, 8);
        return PyFloat_FromDouble(value);
    }
    case DATE: {
        if (need(in, 3)) return NULL;
        in->pos += 3;
        long packed = (long)little(p, 3);
        int year = (int)((packed >> 9) & 0x7FFF), month = (int)((packed >> 5) & 0xF), day = (int)(packed & 0x1F);
        if (year == 0 || month == 0 || day == 0) return for_the_library();
        return PyDate_FromDate(year, month, day);
    }
    case DATETIME2: {
        int bytes = 5 + (column->size + 1) / 2;
        if (need(in, bytes)) return NULL;
        in->pos += bytes;
        uint64_t packed = big(p, 5);
        long year_month = (long)((packed >> 22) & 0x1FFFF);
        PyObject *value = PyDateTime_FromDateAndTime((int)(year_month / 13), (int)(year_month % 13),
                                                     (int)((packed >> 17) & 0x1F), (int)((packed >> 12) & 0x1F),
                                                     (int)((packed >> 6) & 0x3F), (int)(packed & 0x3F),
                                                     (int)fraction(p + 5, column->size));
        if (value == NULL && PyErr_ExceptionMatches(PyExc_ValueError)) {
            PyErr_Clear();
            return for_the_library();
        }
        return value;
    }
    case TIMESTAMP2: {
        int bytes = 4 + (column->size + 1) / 2;
        if (need(in, bytes)) return NULL;
        in->pos += bytes;
        time_t seconds = (time_t)(int32_t)big(p, 4);
        struct tm utc;
        if (gmtime_r(&seconds, &utc) == NULL) return for_the_library();
        return PyDateTime_FromDateAndTime(utc.tm_year + 1900, utc.tm_mon + 1, utc.tm_mday, utc.tm_hour, utc.tm_min,
                                          utc.tm_sec, (int)fraction(p + 4, column->size));
    }
    case TIME2: { /* binlog.py's _read_time2 */
        int frac_bytes = (column->size + 1) / 2;
        if (need(in, 3 + frac_bytes)) return NULL;
        in->pos += 3 + frac_bytes;
        int64_t intpart = (int64_t)big(p, 3) - 0x800000;
        int64_t packed;
        if (frac_bytes == 3) {
            packed = (int64_t)big(p, 6) - 0x800000000000LL;
        } else {
            int64_t frac = frac_bytes ? (int64_t)big(p + 3, frac_bytes) : 0;
            if (intpart < 0 && frac) {
                intpart += 1;
                frac -= (int64_t)1 << (8 * frac_bytes);
            }
            packed = intpart * ((int64_t)1 << 24) + frac * (frac_bytes == 1 ? 10000 : frac_bytes == 2 ? 100 : 0);
        }
        int negative = packed < 0;
        int64_t magnitude = negative ? -packed : packed;
        int64_t hms = magnitude >> 24, micros = magnitude % ((int64_t)1 << 24);
        int64_t seconds = ((hms >> 12) % 1024) * 3600 + ((hms >> 6) % 64) * 60 + hms % 64;
        seconds += micros / 1000000;
        micros %= 1000000;
        return PyDelta_FromDSU(0, (int)(negative ? -seconds : seconds), (int)(negative ? -micros : micros));
    }
    case NEWDECIMAL: {
        int bytes = decimal_length(column->size, column->scale);
        if (need(in, bytes)) return NULL;
        in->pos += bytes;
        return decimal_of(p, column->size, column->scale);
    }
    case STRING: {
        if (need(in, column->size)) return NULL;
        uint64_t length = little(p, column->size);
        in->pos += column->size;
        if ((uint64_t)(in->length - in->pos) < length) {
            truncated();
            return NULL;
        }
        const char *text = (const char *)in->data + in->pos;
        in->pos += (Py_ssize_t)length;
        /* the library's bytes.decode gives "" for no bytes before it looks its codec up (even one it lacks) */
        if (length == 0) return PyUnicode_New(0, 0);
        if (column->encoding == NULL) return PyBytes_FromStringAndSize(text, (Py_ssize_t)length);
        if (column->utf8) return PyUnicode_DecodeUTF8(text, (Py_ssize_t)length, "strict");
        return PyUnicode_Decode(text, (Py_ssize_t)length, column->encoding, "strict");
    }
    }
    PyErr_SetString(PyExc_ValueError, "unknown column kind");
    return NULL;
}

static int bit(const unsigned char *bitmap, Py_ssize_t index) {
    return (bitmap[index / 8] >> (index % 8)) & 1;
}

/* One row image: {name: value} for every column (None when NULL or not in the image, as the library gives). */
static PyObject *image(Reader *in, const Column *columns, Py_ssize_t count, const unsigned char *present) {
    Py_ssize_t in_image = 0;
    for (Py_ssize_t i = 0; i < count; i++) in_image += bit(present, i);
    Py_ssize_t null_bytes = (in_image + 7) / 8;
    if (need(in, null_bytes)) return NULL;
    const unsigned char *nulls = in->data + in->pos;
    in->pos += null_bytes;
    PyObject *row = _PyDict_NewPresized(count);
    if (row == NULL) return NULL;
    Py_ssize_t null_index = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *value;
        if (!bit(present, i)) {
            value = Py_NewRef(Py_None);
        } else {
            value = bit(nulls, null_index) ? Py_NewRef(Py_None) : value_of(in, &columns[i]);
            null_index++;
        }
        if (value == NULL || PyDict_SetItem(row, columns[i].name, value) < 0) {
            Py_XDECREF(value);
            Py_DECREF(row);
            return NULL;
        }
        Py_DECREF(value);
    }
    return row;
}

/* decode_rows(body, layout, present, present_after) -> list: the event's rows, each a dict (write and delete
   events) or a (before, after) tuple of dicts (update events: present_after is not None). `layout`: a tuple of
   (name, kind, size, encoding or scale or None) per column, as compiled_rows.layout makes it. ValueError: a value
   the library is to decode (or a truncated event). */
static PyObject *decode_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "decode_rows(body, layout, present, present_after)");
        return NULL;
    }
    Py_buffer body, present, after;
    if (PyObject_GetBuffer(args[0], &body, PyBUF_SIMPLE) < 0) return NULL;
    if (PyObject_GetBuffer(args[2], &present, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&body);
        return NULL;
    }
    int update = args[3] != Py_None;
    if (update && PyObject_GetBuffer(args[3], &after, PyBUF_SIMPLE) < 0) {
        PyBuffer_Release(&body);
        PyBuffer_Release(&present);
        return NULL;
    }
    PyObject *rows = NULL;
    Column *columns = NULL;
    PyObject *layout = args[1];
    if (!PyTuple_Check(layout)) {
        PyErr_SetString(PyExc_TypeError, "layout must be a tuple");
        goto done;
    }
    Py_ssize_t count = PyTuple_GET_SIZE(layout);
    if ((count + 7) / 8 > present.len || (update && (count + 7) / 8 > after.len)) {
        PyErr_SetString(PyExc_ValueError, "a columns-present bitmap is shorter than the layout");
        goto done;
    }
    columns = PyMem_Calloc((size_t)(count ? count : 1), sizeof(Column));
    if (columns == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *spec = PyTuple_GET_ITEM(layout, i);
        if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 4) {
            PyErr_SetString(PyExc_TypeError, "a layout column is (name, kind, size, encoding or scale)");
            goto done;
        }
        columns[i].name = PyTuple_GET_ITEM(spec, 0);
        columns[i].kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(spec, 1));
        columns[i].size = (int)PyLong_AsLong(PyTuple_GET_ITEM(spec, 2));
        if (PyErr_Occurred()) goto done;
        PyObject *last = PyTuple_GET_ITEM(spec, 3);
        int kind = columns[i].kind, size = columns[i].size;
        if (kind == STRING && last != Py_None) {
            columns[i].encoding = PyUnicode_AsUTF8(last);
            if (columns[i].encoding == NULL) goto done;
            columns[i].utf8 = strcmp(columns[i].encoding, "utf8") == 0 || strcmp(columns[i].encoding, "utf-8") == 0;
        } else if (kind == NEWDECIMAL) {
            columns[i].scale = (int)PyLong_AsLong(last);
            if (PyErr_Occurred()) goto done;
        }
        if ((kind == STRING && (size < 1 || size > 4)) || ((kind == DATETIME2 || kind == TIMESTAMP2 || kind == TIME2)
            && (size < 0 || size > 6)) || (kind == NEWDECIMAL && (size < 1 || size > 65 || columns[i].scale < 0
            || columns[i].scale > 30 || columns[i].scale > size)) || kind < INT8 || kind > NEWDECIMAL) {
            PyErr_SetString(PyExc_ValueError, "a layout column out of range");
            goto done;
        }
    }
    rows = PyList_New(0);
    if (rows == NULL) goto done;
    Reader in = {body.buf, body.len, 0};
    while (in.pos < in.length) {
        Py_ssize_t row_start = in.pos;
        PyObject *row = image(&in, columns, count, present.buf);
        if (row != NULL && update) {
            PyObject *changed = image(&in, columns, count, after.buf);
            PyObject *pair = changed == NULL ? NULL : PyTuple_Pack(2, row, changed);
            Py_DECREF(row);
            Py_XDECREF(changed);
            row = pair;
        }
        if (row != NULL && in.pos == row_start) { /* a row of no bytes (no column present) would never end */
            Py_CLEAR(row);
            PyErr_SetString(PyExc_ValueError, "a row of no bytes");
        }
        if (row == NULL || PyList_Append(rows, row) < 0) {
            Py_XDECREF(row);
            Py_CLEAR(rows);
            goto done;
        }
        Py_DECREF(row);
    }
done:
    PyMem_Free(columns);
    PyBuffer_Release(&body);
    PyBuffer_Release(&present);
    if (update) PyBuffer_Release(&after);
    return rows;
}

/* write_row(values, columns) -> str | None: "{" + the columns' `prefix + text` + "}", each text written here for an
   int (INTEGER) or a str (STRING) and by the column's `write(value)` otherwise; `columns` holds (name, prefix, kind,
   write) tuples (envelope.TableEvents' writers), a value missing from `values` is None. None: a text with no UTF-8
   (lone surrogates), which the Python loop writes (and the event's encoding then refuses, as it did). */
enum { WRITE_CALL = 0, WRITE_INTEGER = 1, WRITE_STRING = 2 };

static int put_written(Buffer *out, PyObject *write, PyObject *value) {
    PyObject *text = PyObject_CallOneArg(write, value);
    if (text == NULL) return -1;
    int failed = PyUnicode_Check(text) ? put_str(out, text) : -1;
    if (failed && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a column writer must return a str");
    Py_DECREF(text);
    return failed;
}

static int put_integer(Buffer *out, PyObject *value, PyObject *write) {
    int overflow;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (number == -1 && PyErr_Occurred()) return -1;
    if (overflow) return put_written(out, write, value);
    char digits_text[CDC_INT64_TEXT_MAX];
    return put(out, digits_text, decimal_int64(digits_text, number));
}

/* The row's JSON into `out`; -1 with an exception set. */
static int put_row(Buffer *out, PyObject *values, PyObject *columns) {
    if (put(out, "{", 1) < 0) return -1;
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(columns); i++) {
        PyObject *spec = PyTuple_GET_ITEM(columns, i);
        if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 4) {
            PyErr_SetString(PyExc_TypeError, "a column is (name, prefix, kind, write)");
            return -1;
        }
        PyObject *value = PyDict_GetItemWithError(values, PyTuple_GET_ITEM(spec, 0));
        if (value == NULL) {
            if (PyErr_Occurred()) return -1;
            value = Py_None;
        }
        if (put_str(out, PyTuple_GET_ITEM(spec, 1)) < 0) return -1;
        long kind = PyLong_AsLong(PyTuple_GET_ITEM(spec, 2));
        if (kind == -1 && PyErr_Occurred()) return -1;
        PyObject *write = PyTuple_GET_ITEM(spec, 3);
        int failure;
        if (kind == WRITE_INTEGER && PyLong_CheckExact(value)) {
            failure = put_integer(out, value, write);
        } else if (kind == WRITE_STRING && PyUnicode_CheckExact(value)) {
            Py_ssize_t length;
            const char *text = PyUnicode_AsUTF8AndSize(value, &length);
            failure = text == NULL ? -1 : put_json_string(out, text, length);
        } else {
            failure = put_written(out, write, value);
        }
        if (failure) return -1;
    }
    return put(out, "}", 1);
}

/* A failed write's result: None for a text with no UTF-8 (the Python way writes it), else the exception. */
static PyObject *failed_write(Buffer *out) {
    PyMem_Free(out->data);
    if (PyErr_ExceptionMatches(PyExc_UnicodeEncodeError)) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return NULL;
}

static PyObject *write_row(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyDict_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "write_row(values: dict, columns: tuple)");
        return NULL;
    }
    Buffer out = {NULL, 0, 0};
    if (put_row(&out, args[0], args[1]) < 0) return failed_write(&out);
    PyObject *text = PyUnicode_DecodeUTF8(out.data, out.length, "strict");
    PyMem_Free(out.data);
    return text;
}

/* write_event(parts, before, after, row, columns) -> bytes | None: the UTF-8 of
   f"{parts[0]}{before}{parts[1]}{after}{parts[2]}{row}{parts[3]}", `before` and `after` written as write_row writes
   them ("null" for None), as envelope.TableEvents.append_streamed's Python way does. None: what that way writes
   itself (a row that is not a dict, a row index that is no int of 64 bits, a text with no UTF-8). */
static PyObject *write_event(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5 || !PyTuple_Check(args[0]) || PyTuple_GET_SIZE(args[0]) != 4 || !PyTuple_Check(args[4])) {
        PyErr_SetString(PyExc_TypeError, "write_event(parts: tuple of 4 str, before, after, row: int, columns)");
        return NULL;
    }
    PyObject *parts = args[0], *rows[2] = {args[1], args[2]}, *columns = args[4];
    for (int i = 0; i < 4; i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(parts, i))) Py_RETURN_NONE;
    }
    for (int i = 0; i < 2; i++) {
        if (rows[i] != Py_None && !PyDict_CheckExact(rows[i])) Py_RETURN_NONE;
    }
    if (!PyLong_CheckExact(args[3])) Py_RETURN_NONE;
    int overflow;
    long long row = PyLong_AsLongLongAndOverflow(args[3], &overflow);
    if (overflow || (row == -1 && PyErr_Occurred())) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    char row_text[CDC_INT64_TEXT_MAX];
    int row_length = decimal_int64(row_text, row);
    Buffer out = {NULL, 0, 0};
    for (int i = 0; i < 2; i++) {
        if (put_str(&out, PyTuple_GET_ITEM(parts, i)) < 0) return failed_write(&out);
        if (rows[i] == Py_None ? put(&out, "null", 4) < 0 : put_row(&out, rows[i], columns) < 0) {
            return failed_write(&out);
        }
    }
    if (put_str(&out, PyTuple_GET_ITEM(parts, 2)) < 0 || put(&out, row_text, row_length) < 0 ||
        put_str(&out, PyTuple_GET_ITEM(parts, 3)) < 0) {
        return failed_write(&out);
    }
    PyObject *value = PyBytes_FromStringAndSize(out.data, out.length);
    PyMem_Free(out.data);
    return value;
}

/* write_key(values, columns, head, tail) -> bytes | None: the UTF-8 of head + write_row(values, columns) + tail (a
   message key, with or without its schema); None for a text with no UTF-8 (the Python way writes it). */
static PyObject *write_key(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyDict_CheckExact(args[0]) || !PyTuple_Check(args[1]) || !PyUnicode_Check(args[2]) ||
        !PyUnicode_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "write_key(values: dict, columns: tuple, head: str, tail: str)");
        return NULL;
    }
    Buffer out = {NULL, 0, 0};
    if (put_str(&out, args[2]) < 0 || put_row(&out, args[0], args[1]) < 0 || put_str(&out, args[3]) < 0) {
        return failed_write(&out);
    }
    PyObject *key = PyBytes_FromStringAndSize(out.data, out.length);
    PyMem_Free(out.data);
    return key;
}

static PyMethodDef methods[] = {
    {"write_row", (PyCFunction)(void (*)(void))write_row, METH_FASTCALL, "write_row(values, columns) -> str"},
    {"write_event", (PyCFunction)(void (*)(void))write_event, METH_FASTCALL,
     "write_event(parts, before, after, row, columns) -> bytes | None"},
    {"write_key", (PyCFunction)(void (*)(void))write_key, METH_FASTCALL,
     "write_key(values, columns, head, tail) -> bytes | None"},
    {"decode_rows", (PyCFunction)(void (*)(void))decode_rows, METH_FASTCALL,
     "decode_rows(body, layout, present, present_after) -> list"},
    {"text_rows", (PyCFunction)(void (*)(void))text_rows, METH_FASTCALL,
     "text_rows(read, sequence, kinds, calls) -> (rows, last packet, next sequence)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {PyModuleDef_HEAD_INIT, "_binrows", NULL, -1, methods};

PyMODINIT_FUNC PyInit__binrows(void) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return NULL;
    PyObject *decimal = PyImport_ImportModule("decimal");
    if (decimal == NULL) return NULL;
    decimal_type = PyObject_GetAttrString(decimal, "Decimal");
    Py_DECREF(decimal);
    if (decimal_type == NULL) return NULL;
    return PyModule_Create(&module_definition);
}
