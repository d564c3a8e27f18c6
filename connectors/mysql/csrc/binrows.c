/* The compiled module _binrows (connectors/mysql/compiled_rows.py): the rows of a binlog rows event, decoded from
   the event's body as python-mysql-replication's RowsEvent decodes them (the same values, the same dicts) for the
   column kinds compiled_rows.py lists; a table with any other type is left to the library
   (tests/mariadb/test_compiled_rows.py compares the two on real binlog events). And a row's JSON text from those
   values, as envelope.TableEvents writes it in Python (tests/mariadb/test_compiled_rows.py too). And a run of a
   rows event's rows written straight into Kafka messages from the event's bytes, as the Python way writes them from
   the decoded rows (count_rows, write_run; tests/unit/test_binrows_write_run.py). And the rows of a SELECT's
   text-protocol result set (textrows.c). */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <datetime.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include "connect_values.h"
#include "decimal_text.h"
#include "json_text.h"
#include "slots_maker.h"
#include "textrows.h"

static PyObject *decimal_type; /* decimal.Decimal */

/* Column kinds (compiled_rows.py) */
enum {
    INT8 = 0, UINT8, INT16, UINT16, INT24, UINT24, INT32, UINT32, INT64, UINT64, FLOAT, DOUBLE, STRING, YEAR,
    DATE, DATETIME2, TIMESTAMP2, TIME2, NEWDECIMAL, ENUM_INDEX, SET_BITS, BIT_STRING
};

typedef struct {
    PyObject *name;     /* borrowed from the layout */
    int kind;
    int size;           /* STRING: bytes of the length prefix; temporals: fsp; NEWDECIMAL: precision; ENUM_INDEX,
                           SET_BITS: bytes of the value; BIT_STRING: bits */
    int scale;          /* NEWDECIMAL */
    PyObject *values;   /* ENUM_INDEX: the library's values by index ("" first); SET_BITS: by bit (borrowed) */
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

/* A binlog DECIMAL's text at `text` (room for 160): "-"? digits "." digits (the digits of the whole part may lead with
   zeros or be none); its length, -1 for a value longer than any DECIMAL. */
static int decimal_text(const unsigned char *p, int precision, int scale, char *text) {
    static const int compressed[] = {0, 1, 1, 2, 2, 3, 3, 4, 4, 4};
    int integral = precision - scale;
    int whole_integral = integral / 9, whole_fraction = scale / 9;
    int lead = compressed[integral - whole_integral * 9], tail = compressed[scale - whole_fraction * 9];
    int length = lead + 4 * (whole_integral + whole_fraction) + tail;
    unsigned char bytes[64];
    if (length > (int)sizeof(bytes)) return -1;
    memcpy(bytes, p, (size_t)length);
    int negative = !(bytes[0] & 0x80);
    bytes[0] ^= 0x80;
    uint32_t mask = negative ? 0xFFFFFFFFu : 0;
    const size_t room = 160;
    int at = 0;
    if (negative) text[at++] = '-';
    const unsigned char *q = bytes;
    if (lead) {
        uint32_t value = ((uint32_t)big(q, lead) ^ mask) & (lead == 4 ? 0xFFFFFFFFu : ((1u << (8 * lead)) - 1));
        at += snprintf(text + at, room - (size_t)at, "%u", value);
        q += lead;
    }
    for (int i = 0; i < whole_integral; i++, q += 4)
        at += snprintf(text + at, room - (size_t)at, "%09u", (uint32_t)big(q, 4) ^ mask);
    text[at++] = '.';
    for (int i = 0; i < whole_fraction; i++, q += 4)
        at += snprintf(text + at, room - (size_t)at, "%09u", (uint32_t)big(q, 4) ^ mask);
    if (tail) {
        uint32_t value = ((uint32_t)big(q, tail) ^ mask) & (tail == 4 ? 0xFFFFFFFFu : ((1u << (8 * tail)) - 1));
        at += snprintf(text + at, room - (size_t)at, "%0*u", scale - whole_fraction * 9, value);
    }
    return at;
}

static PyObject *decimal_of(const unsigned char *p, int precision, int scale) {
    char text[160];
    int length = decimal_text(p, precision, scale, text);
    if (length < 0) return for_the_library();
    return PyObject_CallFunction(decimal_type, "s#", text, (Py_ssize_t)length);
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
    case ENUM_INDEX: { /* the library's enum_values[index] */
        if (need(in, column->size)) return NULL;
        in->pos += column->size;
        uint64_t index = little(p, column->size);
        if (index >= (uint64_t)PyTuple_GET_SIZE(column->values)) return for_the_library();
        return Py_NewRef(PyTuple_GET_ITEM(column->values, (Py_ssize_t)index));
    }
    case SET_BITS: { /* the values of the bits set; none: frozenset() (binlog._values of the library's empty set) */
        if (need(in, column->size)) return NULL;
        in->pos += column->size;
        uint64_t mask = little(p, column->size);
        PyObject *members = PySet_New(NULL);
        if (members == NULL) return NULL;
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(column->values) && i < 64; i++) {
            if ((mask >> i) & 1 && PySet_Add(members, PyTuple_GET_ITEM(column->values, i)) < 0) {
                Py_DECREF(members);
                return NULL;
            }
        }
        PyObject *frozen = PyFrozenSet_New(members);
        Py_DECREF(members);
        return frozen;
    }
    case BIT_STRING: { /* the library's __read_bit: the value's `size` low bits, big-endian, as "0" and "1" */
        int bytes = (column->size + 7) / 8;
        if (need(in, bytes)) return NULL;
        in->pos += bytes;
        uint64_t value = big(p, bytes);
        char text[64];
        for (int i = 0; i < column->size; i++) text[i] = (char)('0' + ((value >> (column->size - 1 - i)) & 1));
        return PyUnicode_DecodeASCII(text, column->size, "strict");
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

/* The columns of a layout tuple (compiled_rows.layout) into `columns` (count entries); -1 with an exception set. */
static int parse_layout(PyObject *layout, Column *columns, Py_ssize_t count) {
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *spec = PyTuple_GET_ITEM(layout, i);
        if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 4) {
            PyErr_SetString(PyExc_TypeError, "a layout column is (name, kind, size, encoding or scale)");
            return -1;
        }
        columns[i].name = PyTuple_GET_ITEM(spec, 0);
        columns[i].kind = (int)PyLong_AsLong(PyTuple_GET_ITEM(spec, 1));
        columns[i].size = (int)PyLong_AsLong(PyTuple_GET_ITEM(spec, 2));
        if (PyErr_Occurred()) return -1;
        PyObject *last = PyTuple_GET_ITEM(spec, 3);
        int kind = columns[i].kind, size = columns[i].size;
        if (kind == STRING && last != Py_None) {
            columns[i].encoding = PyUnicode_AsUTF8(last);
            if (columns[i].encoding == NULL) return -1;
            columns[i].utf8 = strcmp(columns[i].encoding, "utf8") == 0 || strcmp(columns[i].encoding, "utf-8") == 0;
        } else if (kind == NEWDECIMAL) {
            columns[i].scale = (int)PyLong_AsLong(last);
            if (PyErr_Occurred()) return -1;
        } else if (kind == ENUM_INDEX || kind == SET_BITS) {
            if (!PyTuple_Check(last)) {
                PyErr_SetString(PyExc_TypeError, "an ENUM's or SET's layout column ends with its values' tuple");
                return -1;
            }
            columns[i].values = last;
        }
        if ((kind == STRING && (size < 1 || size > 4)) || ((kind == DATETIME2 || kind == TIMESTAMP2 || kind == TIME2)
            && (size < 0 || size > 6)) || (kind == NEWDECIMAL && (size < 1 || size > 65 || columns[i].scale < 0
            || columns[i].scale > 30 || columns[i].scale > size)) || (kind == ENUM_INDEX && (size < 1 || size > 2))
            || (kind == SET_BITS && (size < 1 || size > 8)) || (kind == BIT_STRING && (size < 1 || size > 64))
            || kind < INT8 || kind > BIT_STRING) {
            PyErr_SetString(PyExc_ValueError, "a layout column out of range");
            return -1;
        }
    }
    return 0;
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
    if (parse_layout(layout, columns, count) < 0) goto done;
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
enum { WRITE_CALL = 0, WRITE_INTEGER = 1, WRITE_STRING = 2, WRITE_LONG = 3, WRITE_DOUBLE = 4, WRITE_DECIMAL = 5,
       WRITE_DATE = 6, WRITE_MICROS = 7, WRITE_MILLIS = 8, WRITE_ZONED = 9, WRITE_MICROTIME = 10, WRITE_MILLITIME = 11,
       WRITE_YEAR = 12, WRITE_FLOAT = 13 };
/* A kind's flag: the column's writer writes None as null (a nullable column without a default), written here */
#define WRITE_NULL 0x80
#define WRITE_KIND(kind) ((kind) & 0x7F) /* WRITE_DECIMAL carries its scale above the low byte, WRITE_ZONED its fsp */

static int put_written(Buffer *out, PyObject *write, PyObject *value) {
    PyObject *text = PyObject_CallOneArg(write, value);
    if (text == NULL) return -1;
    int failed = PyUnicode_Check(text) ? put_str(out, text) : -1;
    if (failed && !PyErr_Occurred()) PyErr_SetString(PyExc_TypeError, "a column writer must return a str");
    Py_DECREF(text);
    return failed;
}

/* An int's digits; WRITE_LONG: one from 2^63 to 2^64 - 1 wrapped around as Java's long (types.java_long). */
static int put_integer(Buffer *out, PyObject *value, PyObject *write, long kind) {
    int overflow;
    long long number = PyLong_AsLongLongAndOverflow(value, &overflow);
    if (number == -1 && PyErr_Occurred()) return -1;
    if (overflow > 0 && WRITE_KIND(kind) == WRITE_LONG) {
        unsigned long long wide = PyLong_AsUnsignedLongLong(value);
        if (wide == (unsigned long long)-1 && PyErr_Occurred()) {
            PyErr_Clear();
            return put_written(out, write, value);
        }
        number = (long long)wide;
        overflow = 0;
    }
    if (overflow) return put_written(out, write, value);
    return put_int64(out, number);
}

/* A Decimal as a WRITE_DECIMAL column of `scale` writes it; 1: a Decimal its writer is to write. */
static int put_decimal_object(Buffer *out, PyObject *value, long scale) {
    PyObject *text = PyObject_Str(value);
    if (text == NULL) return -1;
    Py_ssize_t length;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &length);
    int result = utf8 == NULL ? -1 : put_decimal_text(out, utf8, length, scale);
    Py_DECREF(text);
    return result;
}

/* A TIMESTAMP's datetime (UTC) as types._timestamp's `iso` writes a streamed one, in quotes: its `fsp` fraction
   digits (none when 0, but a fraction's digits without trailing zeros); 1 for the epoch (the column's zero value,
   which its writer writes) and years strftime may write otherwise. */
static int put_zoned(Buffer *out, int year, int month, int day, int hour, int minute, int second, int micro,
                     long fsp) {
    if (year < 1000 || year > 9999 || fsp < 0 || fsp > 6 || micro < 0 || micro > 999999) return 1;
    if (year == 1970 && month == 1 && day == 1 && hour == 0 && minute == 0 && second == 0 && micro == 0) return 1;
    char text[64];
    int at = snprintf(text, sizeof text, "\"%04d-%02d-%02dT%02d:%02d:%02d", year, month, day, hour, minute, second);
    char digits[16];
    snprintf(digits, sizeof digits, "%06d", micro);
    int count = (int)fsp;
    if (count == 0 && micro) {
        count = 6;
        while (digits[count - 1] == '0') count--;
    }
    if (count) {
        text[at++] = '.';
        memcpy(text + at, digits, (size_t)count);
        at += count;
    }
    text[at++] = 'Z';
    text[at++] = '"';
    return put(out, text, at);
}

/* A decoded value as the column's writer `write` gives it: an int (WRITE_INTEGER, WRITE_LONG), a str
   (WRITE_STRING), a float (WRITE_DOUBLE, WRITE_FLOAT), a Decimal (WRITE_DECIMAL), a date (WRITE_DATE) or a naive datetime
   (WRITE_MICROS, WRITE_MILLIS) written here, anything else by `write`. */
static int put_value(Buffer *out, PyObject *value, long kind, PyObject *write) {
    if (value == Py_None && (kind & WRITE_NULL)) return put(out, "null", 4);
    switch (WRITE_KIND(kind)) {
    case WRITE_INTEGER: case WRITE_LONG:
        if (PyLong_CheckExact(value)) return put_integer(out, value, write, kind);
        break;
    case WRITE_STRING:
        if (PyUnicode_CheckExact(value)) {
            Py_ssize_t length;
            const char *text = PyUnicode_AsUTF8AndSize(value, &length);
            return text == NULL ? -1 : put_json_string(out, text, length);
        }
        break;
    case WRITE_DOUBLE:
        if (PyFloat_CheckExact(value)) return put_java_double(out, PyFloat_AS_DOUBLE(value));
        break;
    case WRITE_FLOAT:
        if (PyFloat_CheckExact(value)) {
            int written = put_java_float(out, PyFloat_AS_DOUBLE(value));
            if (written != 1) return written;
        }
        break;
    case WRITE_DECIMAL:
        if (Py_IS_TYPE(value, (PyTypeObject *)decimal_type)) {
            int written = put_decimal_object(out, value, kind >> 8);
            if (written != 1) return written;
        }
        break;
    case WRITE_DATE:
        if (PyDate_CheckExact(value)) {
            return put_int64(out, days_from_civil(PyDateTime_GET_YEAR(value), PyDateTime_GET_MONTH(value),
                                                  PyDateTime_GET_DAY(value)));
        }
        break;
    case WRITE_MICROS: case WRITE_MILLIS:
        if (PyDateTime_CheckExact(value) && PyDateTime_DATE_GET_TZINFO(value) == Py_None) {
            long long micros = epoch_micros(PyDateTime_GET_YEAR(value), PyDateTime_GET_MONTH(value),
                                            PyDateTime_GET_DAY(value), PyDateTime_DATE_GET_HOUR(value),
                                            PyDateTime_DATE_GET_MINUTE(value), PyDateTime_DATE_GET_SECOND(value),
                                            PyDateTime_DATE_GET_MICROSECOND(value));
            return put_int64(out, WRITE_KIND(kind) == WRITE_MICROS ? micros : floor_millis(micros));
        }
        break;
    case WRITE_ZONED:
        if (PyDateTime_CheckExact(value) && PyDateTime_DATE_GET_TZINFO(value) == Py_None) {
            int written = put_zoned(out, PyDateTime_GET_YEAR(value), PyDateTime_GET_MONTH(value),
                                    PyDateTime_GET_DAY(value), PyDateTime_DATE_GET_HOUR(value),
                                    PyDateTime_DATE_GET_MINUTE(value), PyDateTime_DATE_GET_SECOND(value),
                                    PyDateTime_DATE_GET_MICROSECOND(value), kind >> 8);
            if (written != 1) return written;
        }
        break;
    case WRITE_MICROTIME: case WRITE_MILLITIME:
        if (PyDelta_CheckExact(value)) {
            long long micros = ((long long)PyDateTime_DELTA_GET_DAYS(value) * 86400 +
                                PyDateTime_DELTA_GET_SECONDS(value)) * 1000000LL +
                               PyDateTime_DELTA_GET_MICROSECONDS(value);
            return put_int64(out, WRITE_KIND(kind) == WRITE_MICROTIME ? micros : floor_millis(micros));
        }
        break;
    case WRITE_YEAR:
        if (PyLong_CheckExact(value)) {
            int overflow;
            long long year = PyLong_AsLongLongAndOverflow(value, &overflow);
            if (year == -1 && PyErr_Occurred()) return -1;
            if (!overflow) return put_int64(out, year == 1900 ? 0 : year);
        }
        break;
    }
    return put_written(out, write, value);
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
        if (put_value(out, value, kind, PyTuple_GET_ITEM(spec, 3))) return -1;
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

/* ---- runs: a rows event's messages straight from its body ---------------------------------------------------- */

/* The bytes of one value of `column` at in->pos (a string's length prefix included); -1 when the event ends first. */
static Py_ssize_t value_size(const Reader *in, const Column *column) {
    const unsigned char *p = in->data + in->pos;
    Py_ssize_t left = in->length - in->pos, size;
    switch (column->kind) {
    case INT8: case UINT8: case YEAR: size = 1; break;
    case INT16: case UINT16: size = 2; break;
    case INT24: case UINT24: case DATE: size = 3; break;
    case INT32: case UINT32: case FLOAT: size = 4; break;
    case INT64: case UINT64: case DOUBLE: size = 8; break;
    case DATETIME2: size = 5 + (column->size + 1) / 2; break;
    case TIMESTAMP2: size = 4 + (column->size + 1) / 2; break;
    case TIME2: size = 3 + (column->size + 1) / 2; break;
    case NEWDECIMAL: size = decimal_length(column->size, column->scale); break;
    case ENUM_INDEX: case SET_BITS: size = column->size; break;
    case BIT_STRING: size = (column->size + 7) / 8; break;
    case STRING: {
        if (left < column->size) return -1;
        uint64_t length = little(p, column->size);
        if ((uint64_t)(left - column->size) < length) return -1;
        return column->size + (Py_ssize_t)length;
    }
    default: return -1;
    }
    return left < size ? -1 : size;
}

/* Where each column's value starts in the row image at in->pos (-1: None, absent from the image or NULL); moves
   in->pos past the image. -1 with ValueError when the event ends inside it. */
static int image_starts(Reader *in, const Column *columns, Py_ssize_t count, const unsigned char *present,
                        Py_ssize_t *starts) {
    Py_ssize_t in_image = 0;
    for (Py_ssize_t i = 0; i < count; i++) in_image += bit(present, i);
    Py_ssize_t null_bytes = (in_image + 7) / 8;
    if (need(in, null_bytes)) return -1;
    const unsigned char *nulls = in->data + in->pos;
    in->pos += null_bytes;
    Py_ssize_t null_index = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        starts[i] = -1;
        if (!bit(present, i)) continue;
        if (!bit(nulls, null_index++)) {
            Py_ssize_t size = value_size(in, &columns[i]);
            if (size < 0) return truncated();
            starts[i] = in->pos;
            in->pos += size;
        }
    }
    return 0;
}

/* The value at `start` as decode_rows gives it (None for -1); NULL with an exception set. */
static PyObject *value_at(const Reader *in, const Column *column, Py_ssize_t start) {
    if (start < 0) return Py_NewRef(Py_None);
    Reader at = {in->data, in->length, start};
    return value_of(&at, column);
}

static int is_ascii(const unsigned char *text, Py_ssize_t length) {
    Py_ssize_t i = 0;
    for (; i + 8 <= length; i += 8) {
        if (load_word(text + i) & CDC_HIGHS) return 0;
    }
    for (; i < length; i++) {
        if (text[i] & 0x80) return 0;
    }
    return 1;
}

/* 0 when decode_rows decodes the value at `start` (a number always; a string or a temporal when its value is one the
   library's way gives too), else -1 with an exception set. */
static int check_value(const Reader *in, const Column *column, Py_ssize_t start) {
    if (start < 0) return 0;
    int kind = column->kind;
    if (kind <= DOUBLE || kind == YEAR || kind == SET_BITS || kind == BIT_STRING) return 0;
    if (kind == ENUM_INDEX && little(in->data + start, column->size) < (uint64_t)PyTuple_GET_SIZE(column->values))
        return 0;
    const unsigned char *p = in->data + start;
    if (kind == STRING) {
        if (column->encoding == NULL) return 0;
        uint64_t length = little(p, column->size);
        if (column->utf8 && is_ascii(p + column->size, (Py_ssize_t)length)) return 0;
    }
    /* what value_of makes without fail, known without making it (a wide table's decimals and dates, each row) */
    if (kind == NEWDECIMAL && decimal_length(column->size, column->scale) <= 64) return 0;
    if (kind == DATE) {
        long packed = (long)little(p, 3);
        if (valid_date((int)((packed >> 9) & 0x7FFF), (int)((packed >> 5) & 0xF), (int)(packed & 0x1F))) return 0;
    }
    if (kind == DATETIME2) {
        uint64_t packed = big(p, 5);
        long year_month = (long)((packed >> 22) & 0x1FFFF);
        if (valid_date((int)(year_month / 13), (int)(year_month % 13), (int)((packed >> 17) & 0x1F)) &&
            valid_time((int)((packed >> 12) & 0x1F), (int)((packed >> 6) & 0x3F), (int)(packed & 0x3F),
                       fraction(p + 5, column->size)))
            return 0;
    }
    PyObject *value = value_at(in, column, start);
    if (value == NULL) return -1;
    Py_DECREF(value);
    return 0;
}

typedef struct {
    Py_buffer body, present, after;
    int update;
    Column *columns;
    Py_ssize_t count;
    Py_ssize_t *starts; /* 2 * count: a row's before (or only) image, then its after image */
} Rows;

static void rows_release(Rows *rows) {
    PyMem_Free(rows->columns);
    PyMem_Free(rows->starts);
    if (rows->body.obj != NULL) PyBuffer_Release(&rows->body);
    if (rows->present.obj != NULL) PyBuffer_Release(&rows->present);
    if (rows->after.obj != NULL) PyBuffer_Release(&rows->after);
}

/* decode_rows' first four arguments into `rows`; -1 with an exception set (release it either way). */
static int rows_open(Rows *rows, PyObject *const *args) {
    memset(rows, 0, sizeof(*rows));
    if (PyObject_GetBuffer(args[0], &rows->body, PyBUF_SIMPLE) < 0) return -1;
    if (PyObject_GetBuffer(args[2], &rows->present, PyBUF_SIMPLE) < 0) return -1;
    rows->update = args[3] != Py_None;
    if (rows->update && PyObject_GetBuffer(args[3], &rows->after, PyBUF_SIMPLE) < 0) return -1;
    PyObject *layout = args[1];
    if (!PyTuple_Check(layout)) {
        PyErr_SetString(PyExc_TypeError, "layout must be a tuple");
        return -1;
    }
    Py_ssize_t count = rows->count = PyTuple_GET_SIZE(layout);
    if ((count + 7) / 8 > rows->present.len || (rows->update && (count + 7) / 8 > rows->after.len)) {
        PyErr_SetString(PyExc_ValueError, "a columns-present bitmap is shorter than the layout");
        return -1;
    }
    rows->columns = PyMem_Calloc((size_t)(count ? count : 1), sizeof(Column));
    rows->starts = PyMem_Calloc((size_t)(count ? 2 * count : 1), sizeof(Py_ssize_t));
    if (rows->columns == NULL || rows->starts == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    return parse_layout(layout, rows->columns, count);
}

/* The next row's images at in->pos: their value starts in rows->starts; -1 with ValueError (truncated, no bytes). */
static int next_row(Rows *rows, Reader *in) {
    Py_ssize_t row_start = in->pos;
    if (image_starts(in, rows->columns, rows->count, rows->present.buf, rows->starts) < 0) return -1;
    if (rows->update &&
        image_starts(in, rows->columns, rows->count, rows->after.buf, rows->starts + rows->count) < 0)
        return -1;
    if (in->pos == row_start) {
        PyErr_SetString(PyExc_ValueError, "a row of no bytes");
        return -1;
    }
    return 0;
}

/* count_rows(body, layout, present, present_after) -> int | None: how many rows decode_rows gives for these
   arguments, without making them; None where it would raise (a value the library decodes, a truncated event, a
   text its codec refuses). write_run takes a body this counted. */
static PyObject *count_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4) {
        PyErr_SetString(PyExc_TypeError, "count_rows(body, layout, present, present_after)");
        return NULL;
    }
    Rows rows;
    Py_ssize_t counted = 0;
    int failed = rows_open(&rows, args) < 0;
    Reader in = {rows.body.buf, rows.body.len, 0};
    while (!failed && in.pos < in.length) {
        failed = next_row(&rows, &in) < 0;
        for (Py_ssize_t i = 0; !failed && i < (rows.update ? 2 : 1) * rows.count; i++)
            failed = check_value(&in, &rows.columns[i % rows.count], rows.starts[i]) < 0;
        counted++;
    }
    rows_release(&rows);
    if (failed) {
        if (PyErr_ExceptionMatches(PyExc_TypeError)) return NULL; /* a caller's mistake, not the event's */
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    return PyLong_FromSsize_t(counted);
}

/* A double, decimal, date or datetime of the body at `p` written as put_value writes the value value_of makes of it,
   without making it: 0 when written (`*failure`: put's result), 1 when the value is another (a kind or scale the
   writer does not take, a date datetime.date refuses: put_value's way decides). */
static int put_binlog_value(Buffer *out, const unsigned char *p, const Column *column, long kind, int *failure) {
    switch (WRITE_KIND(kind)) {
    case WRITE_DOUBLE: {
        if (column->kind != DOUBLE) return 1;
        uint64_t bits = little(p, 8);
        double number;
        memcpy(&number, &bits, 8);
        *failure = put_java_double(out, number);
        return 0;
    }
    case WRITE_DECIMAL: {
        if (column->kind != NEWDECIMAL || column->scale != kind >> 8) return 1;
        char text[160];
        int length = decimal_text(p, column->size, column->scale, text);
        if (length < 0) return 1;
        int written = put_decimal_text(out, text, length, column->scale);
        if (written == 1) return 1;
        *failure = written;
        return 0;
    }
    case WRITE_DATE: {
        if (column->kind != DATE) return 1;
        long packed = (long)little(p, 3);
        int year = (int)((packed >> 9) & 0x7FFF), month = (int)((packed >> 5) & 0xF), day = (int)(packed & 0x1F);
        if (!valid_date(year, month, day)) return 1;
        *failure = put_int64(out, days_from_civil(year, month, day));
        return 0;
    }
    case WRITE_MICROS: case WRITE_MILLIS: {
        if (column->kind != DATETIME2) return 1;
        uint64_t packed = big(p, 5);
        long year_month = (long)((packed >> 22) & 0x1FFFF);
        int year = (int)(year_month / 13), month = (int)(year_month % 13), day = (int)((packed >> 17) & 0x1F);
        int hour = (int)((packed >> 12) & 0x1F), minute = (int)((packed >> 6) & 0x3F), second = (int)(packed & 0x3F);
        long micro = fraction(p + 5, column->size);
        if (!valid_date(year, month, day) || !valid_time(hour, minute, second, micro)) return 1;
        long long micros = epoch_micros(year, month, day, hour, minute, second, micro);
        *failure = put_int64(out, WRITE_KIND(kind) == WRITE_MICROS ? micros : floor_millis(micros));
        return 0;
    }
    }
    return 1;
}

/* One column's JSON, as put_row writes the value decode_rows gives: an integer or a UTF-8 text written from the
   body, any other value made (value_of) and written as put_row writes it. */
static int put_column(Buffer *out, const Reader *in, const Column *column, Py_ssize_t start, long kind,
                      PyObject *write) {
    int failure;
    if (start < 0) return (kind & WRITE_NULL) ? put(out, "null", 4) : put_written(out, write, Py_None);
    const unsigned char *p = in->data + start;
    if (WRITE_KIND(kind) == WRITE_INTEGER || WRITE_KIND(kind) == WRITE_LONG) {
        long long number;
        switch (column->kind) {
        case INT8: number = (int8_t)p[0]; break;
        case UINT8: number = p[0]; break;
        case YEAR: number = p[0] + 1900; break;
        case INT16: number = (int16_t)little(p, 2); break;
        case UINT16: number = (long long)little(p, 2); break;
        case INT24: number = (long long)little(p, 3); if (number >= 0x800000) number -= 0x1000000; break;
        case UINT24: number = (long long)little(p, 3); break;
        case INT32: number = (int32_t)little(p, 4); break;
        case UINT32: number = (long long)little(p, 4); break;
        case INT64: number = (int64_t)little(p, 8); break;
        case UINT64: {
            uint64_t value = little(p, 8);
            if (value > (uint64_t)INT64_MAX && WRITE_KIND(kind) != WRITE_LONG) goto general;
            number = (long long)value; /* WRITE_LONG: Java's long wraps around */
            break;
        }
        default: goto general;
        }
        return put_int64(out, number);
    }
    if (WRITE_KIND(kind) == WRITE_STRING && column->kind == STRING && column->utf8) {
        uint64_t length = little(p, column->size);
        return put_json_string(out, (const char *)p + column->size, (Py_ssize_t)length);
    }
    if (put_binlog_value(out, p, column, kind, &failure) == 0) return failure;
general:;
    PyObject *value = value_at(in, column, start);
    if (value == NULL) return -1;
    failure = put_value(out, value, kind, write);
    Py_DECREF(value);
    return failure;
}

/* One column writer of a run: its layout column (-1: none), kind, `"name":` prefix (UTF-8) and writer. */
typedef struct {
    Py_ssize_t column;
    long kind;
    const char *prefix;
    Py_ssize_t prefix_length;
    PyObject *write; /* borrowed from the writers tuple */
} Writer;

/* The writers tuple ((name, prefix, kind, write) each) and their layout columns into `out` (a PyMem array the caller
   frees); -1 with TypeError when they do not fit a layout of `count` columns. */
static int writers_of(PyObject *writers, PyObject *indexes, Py_ssize_t count, Writer **out) {
    *out = NULL;
    if (!PyTuple_Check(writers) || !PyTuple_Check(indexes) || PyTuple_GET_SIZE(writers) != PyTuple_GET_SIZE(indexes))
        goto wrong;
    Py_ssize_t size = PyTuple_GET_SIZE(writers);
    Writer *parsed = *out = PyMem_Calloc((size_t)(size ? size : 1), sizeof(Writer));
    if (parsed == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < size; i++) {
        PyObject *spec = PyTuple_GET_ITEM(writers, i), *index = PyTuple_GET_ITEM(indexes, i);
        if (!PyTuple_Check(spec) || PyTuple_GET_SIZE(spec) != 4 || !PyUnicode_Check(PyTuple_GET_ITEM(spec, 1)) ||
            !PyLong_Check(index) || !PyLong_Check(PyTuple_GET_ITEM(spec, 2)))
            goto wrong;
        parsed[i].column = PyLong_AsSsize_t(index);
        parsed[i].kind = PyLong_AsLong(PyTuple_GET_ITEM(spec, 2));
        if (PyErr_Occurred()) return -1;
        if (parsed[i].column < -1 || parsed[i].column >= count) goto wrong;
        parsed[i].prefix = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(spec, 1), &parsed[i].prefix_length);
        if (parsed[i].prefix == NULL) return -1;
        parsed[i].write = PyTuple_GET_ITEM(spec, 3);
    }
    return 0;
wrong:
    PyErr_SetString(PyExc_TypeError, "write_run: writers of the wrong shape");
    return -1;
}

/* A row image's JSON: "{" + each writer's `prefix + text` + "}". */
static int put_image(Buffer *out, const Reader *in, const Column *columns, const Py_ssize_t *starts,
                     const Writer *writers, Py_ssize_t count) {
    if (put(out, "{", 1) < 0) return -1;
    for (Py_ssize_t i = 0; i < count; i++) {
        const Writer *writer = &writers[i];
        if (put(out, writer->prefix, writer->prefix_length) < 0) return -1;
        Py_ssize_t column = writer->column;
        int failure = column < 0 ? put_value(out, Py_None, writer->kind, writer->write)
                                 : put_column(out, in, &columns[column], starts[column], writer->kind, writer->write);
        if (failure) return -1;
    }
    return put(out, "}", 1);
}

/* An update's key moves (envelope.TableEvents.moves_key: some key column's before != after); -1 with an exception. */
static int key_moves(const Reader *in, const Rows *rows, PyObject *key_columns) {
    for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(key_columns); i++) {
        Py_ssize_t column = PyLong_AsSsize_t(PyTuple_GET_ITEM(key_columns, i));
        if (column < 0) continue; /* None before and after */
        PyObject *before = value_at(in, &rows->columns[column], rows->starts[column]);
        PyObject *after = before == NULL ? NULL
                          : value_at(in, &rows->columns[column], rows->starts[rows->count + column]);
        PyObject *differ = after == NULL ? NULL : PyObject_RichCompare(before, after, Py_NE);
        Py_XDECREF(before);
        Py_XDECREF(after);
        if (differ == NULL) return -1;
        int moved = PyObject_IsTrue(differ);
        Py_DECREF(differ);
        if (moved) return moved;
    }
    return 0;
}

/* write_run(body, layout, present, present_after, first, end, op, parts, table, messages) -> (int, int): the messages
   envelope.TableEvents.append_streamed gives for rows first..end-1 of a rows event (a body count_rows counted)
   appended to `messages`, each made by `make(topic, key, value, None)`; returns the row it stopped before (`end`, or
   an update's row whose key moves: the Python way writes that one, two events and their headers) and the bytes of
   the keys and values it appended (what the sink counts, known here without going over the messages again). `op`: 0 create,
   1 update, 2 delete; `parts`: TableEvents.streamed_parts; `table`: (writers, their layout columns, key writers or
   None, their layout columns, key head, key tail, the key's layout columns for moves, topic, make, tombstones). */
static PyObject *write_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 10 || !PyTuple_Check(args[7]) || PyTuple_GET_SIZE(args[7]) != 4 || !PyTuple_Check(args[8]) ||
        PyTuple_GET_SIZE(args[8]) != 10 || !PyList_Check(args[9])) {
        PyErr_SetString(PyExc_TypeError,
                        "write_run(body, layout, present, present_after, first, end, op, parts, table, messages)");
        return NULL;
    }
    Py_ssize_t first = PyLong_AsSsize_t(args[4]), end = PyLong_AsSsize_t(args[5]);
    long op = PyLong_AsLong(args[6]);
    if (PyErr_Occurred()) return NULL;
    PyObject *parts = args[7], *table = args[8], *messages = args[9];
    PyObject *writers = PyTuple_GET_ITEM(table, 0), *indexes = PyTuple_GET_ITEM(table, 1),
             *key_writers = PyTuple_GET_ITEM(table, 2), *key_indexes = PyTuple_GET_ITEM(table, 3),
             *key_head = PyTuple_GET_ITEM(table, 4), *key_tail = PyTuple_GET_ITEM(table, 5),
             *key_columns = PyTuple_GET_ITEM(table, 6), *topic = PyTuple_GET_ITEM(table, 7),
             *make = PyTuple_GET_ITEM(table, 8);
    int tombstones = PyObject_IsTrue(PyTuple_GET_ITEM(table, 9));
    if (tombstones < 0) return NULL;
    Rows rows;
    Buffer value_out = {NULL, 0, 0}, key_out = {NULL, 0, 0};
    Writer *row_writers = NULL, *keys = NULL;
    Py_ssize_t row = 0, row_writer_count = 0, key_count = 0, payload = 0;
    int failed = rows_open(&rows, args) < 0;
    if (!failed && (op < 0 || op > 2 || (op == 1) != rows.update || first < 0 || !PyTuple_Check(key_columns) ||
                    (key_writers != Py_None && (!PyUnicode_Check(key_head) || !PyUnicode_Check(key_tail))))) {
        PyErr_SetString(PyExc_TypeError, "write_run: a table or parts of the wrong shape");
        failed = 1;
    }
    if (!failed) {
        failed = writers_of(writers, indexes, rows.count, &row_writers) < 0 ||
                 (key_writers != Py_None && writers_of(key_writers, key_indexes, rows.count, &keys) < 0);
        row_writer_count = PyTuple_Check(writers) ? PyTuple_GET_SIZE(writers) : 0;
        key_count = key_writers != Py_None && PyTuple_Check(key_writers) ? PyTuple_GET_SIZE(key_writers) : 0;
    }
    const char *part_texts[4] = {NULL, NULL, NULL, NULL};
    Py_ssize_t part_lengths[4] = {0, 0, 0, 0};
    for (int i = 0; !failed && i < 4; i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(parts, i))) {
            PyErr_SetString(PyExc_TypeError, "write_run: parts are str");
            failed = 1;
        } else {
            part_texts[i] = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(parts, i), &part_lengths[i]);
            failed = part_texts[i] == NULL;
        }
    }
    for (Py_ssize_t i = 0; !failed && i < PyTuple_GET_SIZE(key_columns); i++) {
        Py_ssize_t at = PyLong_AsSsize_t(PyTuple_GET_ITEM(key_columns, i));
        if (at < -1 || at >= rows.count) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "write_run: a key column out of range");
            failed = 1;
        }
    }
    Reader in = {rows.body.buf, rows.body.len, 0};
    const Py_ssize_t *before = rows.starts, *after = rows.update ? rows.starts + rows.count : rows.starts;
    for (; !failed && row < end && in.pos < in.length; row++) {
        if (next_row(&rows, &in) < 0) {
            failed = 1;
            break;
        }
        if (row < first) continue;
        if (op == 1) {
            int moved = key_moves(&in, &rows, key_columns);
            if (moved) {
                failed = moved < 0;
                break;
            }
        }
        char row_text[CDC_INT64_TEXT_MAX];
        int row_length = decimal_int64(row_text, row);
        /* the rows' JSON first, then the value in one allocation: the parts (the value schema's JSON among them,
           most of a value's bytes) are copied once */
        value_out.length = 0;
        failed = (op == 0 ? put(&value_out, "null", 4)
                          : put_image(&value_out, &in, rows.columns, before, row_writers, row_writer_count)) < 0;
        Py_ssize_t before_length = value_out.length;
        failed = failed || (op == 2 ? put(&value_out, "null", 4)
                                    : put_image(&value_out, &in, rows.columns, after, row_writers, row_writer_count)) < 0;
        if (!failed && key_writers != Py_None) {
            key_out.length = 0;
            failed = put_str(&key_out, key_head) < 0 ||
                     put_image(&key_out, &in, rows.columns, op == 2 ? before : after, keys, key_count) < 0 ||
                     put_str(&key_out, key_tail) < 0;
        }
        if (failed) break;
        PyObject *made[4] = {topic, NULL, NULL, Py_None};
        made[1] = key_writers == Py_None ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize(key_out.data, key_out.length);
        made[2] = made[1] == NULL ? NULL
                  : PyBytes_FromStringAndSize(NULL, part_lengths[0] + part_lengths[1] + part_lengths[2] +
                                                        part_lengths[3] + value_out.length + row_length);
        if (made[2] != NULL) {
            char *at = PyBytes_AS_STRING(made[2]);
            const char *pieces[7] = {part_texts[0], value_out.data, part_texts[1], value_out.data + before_length,
                                     part_texts[2], row_text, part_texts[3]};
            Py_ssize_t sizes[7] = {part_lengths[0], before_length, part_lengths[1], value_out.length - before_length,
                                   part_lengths[2], row_length, part_lengths[3]};
            for (int i = 0; i < 7; i++) {
                memcpy(at, pieces[i], (size_t)sizes[i]);
                at += sizes[i];
            }
        }
        Py_ssize_t key_length = made[1] != NULL && made[1] != Py_None ? PyBytes_GET_SIZE(made[1]) : 0;
        if (made[2] != NULL) payload += key_length + PyBytes_GET_SIZE(made[2]);
        PyObject *message = made[2] == NULL ? NULL : PyObject_Vectorcall(make, made, 4, NULL);
        Py_XDECREF(made[2]);
        failed = message == NULL || PyList_Append(messages, message) < 0;
        Py_XDECREF(message);
        if (!failed && op == 2 && tombstones) {
            made[2] = Py_None;
            message = PyObject_Vectorcall(make, made, 4, NULL);
            failed = message == NULL || PyList_Append(messages, message) < 0;
            Py_XDECREF(message);
            payload += key_length;
        }
        Py_XDECREF(made[1]);
    }
    rows_release(&rows);
    PyMem_Free(row_writers);
    PyMem_Free(keys);
    PyMem_Free(value_out.data);
    PyMem_Free(key_out.data);
    if (failed) return NULL;
    return Py_BuildValue("(nn)", row, payload);
}

static PyMethodDef methods[] = {
    {"write_row", (PyCFunction)(void (*)(void))write_row, METH_FASTCALL, "write_row(values, columns) -> str"},
    {"write_event", (PyCFunction)(void (*)(void))write_event, METH_FASTCALL,
     "write_event(parts, before, after, row, columns) -> bytes | None"},
    {"write_key", (PyCFunction)(void (*)(void))write_key, METH_FASTCALL,
     "write_key(values, columns, head, tail) -> bytes | None"},
    {"decode_rows", (PyCFunction)(void (*)(void))decode_rows, METH_FASTCALL,
     "decode_rows(body, layout, present, present_after) -> list"},
    {"count_rows", (PyCFunction)(void (*)(void))count_rows, METH_FASTCALL,
     "count_rows(body, layout, present, present_after) -> int | None"},
    {"write_run", (PyCFunction)(void (*)(void))write_run, METH_FASTCALL,
     "write_run(body, layout, present, present_after, first, end, op, parts, table, messages) -> (int, int)"},
    {"slots_maker", (PyCFunction)(void (*)(void))slots_maker, METH_FASTCALL, "slots_maker(cls, names) -> maker"},
    {"text_rows", (PyCFunction)(void (*)(void))text_rows, METH_FASTCALL,
     "text_rows(read, sequence, kinds, calls) -> (rows, last packet, next sequence)"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {PyModuleDef_HEAD_INIT, "_binrows", NULL, -1, methods};

PyMODINIT_FUNC PyInit__binrows(void) {
    if (PyType_Ready(&MakerType) < 0) return NULL;
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return NULL;
    PyObject *decimal = PyImport_ImportModule("decimal");
    if (decimal == NULL) return NULL;
    decimal_type = PyObject_GetAttrString(decimal, "Decimal");
    Py_DECREF(decimal);
    if (decimal_type == NULL || text_rows_init(decimal_type) < 0) return NULL;
    return PyModule_Create(&module_definition);
}
