/* The compiled module _pgrows (connectors/postgres/compiled.py): pgoutput tuple data to column texts, a row's
   JSON text from those texts, and a streamed change's event value around that row. Each function does exactly what
   its Python twin does (pgoutput.py's _Reader.tuple_data, rows.py's RowMapper.text_writer and event_writer), which
   tests/postgres/test_pgrows.py checks. */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <structmember.h>

static PyObject *unchanged_toast; /* pgoutput.UNCHANGED_TOAST */
static PyObject *pgoutput_error;  /* pgoutput.PgOutputError */

/* Column kinds of write_row (compiled.py) */
enum { CALL = 0, INTEGER = 1, STRING = 2, BOOLEAN = 3, FIXED_SCALE = 4, UTC_TIMESTAMP = 5, FLOAT64 = 6, EPOCH_DAYS = 7 };

#include "civil_days.h"
#include "decimal_text.h"
#include "java_double.h"
#include "json_text.h"
#include "slots_maker.h"
#include "unscaled_decimal.h"

/* ---- tuple_data --------------------------------------------------------------------------------------------- */

static uint32_t be32(const unsigned char *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

static PyObject *fail(const char *message) {
    PyErr_SetString(pgoutput_error, message);
    return NULL;
}

/* Why read_tuple found no tuple: an exception is set (no memory, or a text column that is not UTF-8), the data
   ends early, or a column kind is unknown (`*kind` holds it). */
enum { TUPLE_ERROR, TUPLE_ENDS_EARLY, TUPLE_UNKNOWN_KIND };

/* A TupleData at `*pos` (str, None, UNCHANGED_TOAST or bytes per column), `*pos` moved past it; NULL with the
   reason in `*why`. A tuple of strs, bytes and Nones is left out of the cyclic collector's lists (it can hold no
   cycle; the collector itself untracks such a tuple at its first collection, after walking its items): a wide
   row's tuple would be walked, column by column, by each collection of the changes queued. */
static PyObject *read_tuple(const unsigned char *data, Py_ssize_t size, Py_ssize_t *pos, int *why,
                            unsigned char *kind_seen) {
    Py_ssize_t at = *pos;
    *why = TUPLE_ENDS_EARLY;
    if (at < 0 || at + 2 > size) return NULL;
    Py_ssize_t count = (Py_ssize_t)(int16_t)(((uint16_t)data[at] << 8) | data[at + 1]);
    at += 2;
    if (count < 0) count = 0; /* as range() of a negative count */
    int atomic = 1;
    PyObject *values = PyTuple_New(count);
    if (values == NULL) {
        *why = TUPLE_ERROR;
        return NULL;
    }
    for (Py_ssize_t i = 0; i < count; i++) {
        if (at >= size) goto failed;
        unsigned char kind = data[at];
        PyObject *value;
        if (kind == 't' || kind == 'b') {
            if (at + 5 > size) goto failed;
            int32_t length = (int32_t)be32(data + at + 1);
            Py_ssize_t start = at + 5;
            if (length < 0 || start + length > size) goto failed;
            at = start + length;
            value = kind == 't' ? PyUnicode_DecodeUTF8((const char *)data + start, length, "strict")
                                : PyBytes_FromStringAndSize((const char *)data + start, length);
            if (value == NULL) {
                *why = TUPLE_ERROR;
                goto failed;
            }
        } else if (kind == 'n') {
            at += 1;
            value = Py_NewRef(Py_None);
        } else if (kind == 'u') {
            at += 1;
            value = Py_NewRef(unchanged_toast);
            atomic = 0;
        } else {
            *why = TUPLE_UNKNOWN_KIND;
            *kind_seen = kind;
            goto failed;
        }
        PyTuple_SET_ITEM(values, i, value);
    }
    if (atomic && count) PyObject_GC_UnTrack(values);
    *pos = at;
    return values;
failed:
    Py_DECREF(values);
    return NULL;
}

/* tuple_data(data, pos) -> (values, pos): a TupleData's columns (str, None, UNCHANGED_TOAST or bytes). */
static PyObject *tuple_data(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "tuple_data(data, pos) takes 2 arguments");
        return NULL;
    }
    if (unchanged_toast == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() was not called");
        return NULL;
    }
    Py_ssize_t pos = PyLong_AsSsize_t(args[1]);
    if (pos == -1 && PyErr_Occurred()) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    int why;
    unsigned char kind = 0;
    PyObject *values = read_tuple(view.buf, view.len, &pos, &why, &kind);
    PyBuffer_Release(&view);
    if (values == NULL) {
        if (why == TUPLE_ENDS_EARLY) return fail("tuple data ends early");
        if (why == TUPLE_UNKNOWN_KIND)
            return PyErr_Format(pgoutput_error, "unknown tuple column kind '%c'", kind);
        return NULL;
    }
    return Py_BuildValue("(Nn)", values, pos);
}

/* ---- row_change --------------------------------------------------------------------------------------------- */

/* A TupleData at `*pos` as tuple_data reads it, or NULL with no exception set (malformed: the Python twin reads it
   and raises its own error) or with one (no memory). */
static PyObject *read_row_tuple(const unsigned char *data, Py_ssize_t size, Py_ssize_t *pos) {
    int why;
    unsigned char kind;
    PyObject *values = read_tuple(data, size, pos, &why, &kind);
    if (values == NULL && why == TUPLE_ERROR && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) PyErr_Clear();
    return values;
}

/* row_change(data, in_stream) -> (relation_id, new, old, old_kind, xid) | None: an Insert, Update or Delete message
   (data[0] is 'I', 'U' or 'D') as pgoutput._row_change reads it (new None for a Delete; old and old_kind None
   without an old tuple; xid None unless `in_stream`). None: anything malformed, which the Python twin reads and
   refuses with its own error. */
static PyObject *row_change(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "row_change(data, in_stream) takes 2 arguments");
        return NULL;
    }
    if (unchanged_toast == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() was not called");
        return NULL;
    }
    int in_stream = PyObject_IsTrue(args[1]);
    if (in_stream < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t size = view.len, pos = 1;
    PyObject *result = NULL, *new = NULL, *old = NULL, *xid = NULL;
    unsigned char old_kind = 0;
    if (size < 1 || (data[0] != 'I' && data[0] != 'U' && data[0] != 'D')) goto done;
    unsigned char kind = data[0];
    if (in_stream) {
        if (pos + 4 > size) goto done;
        xid = PyLong_FromUnsignedLong(be32(data + pos));
        if (xid == NULL) goto done;
        pos += 4;
    }
    if (pos + 5 > size) goto done;
    uint32_t relation_id = be32(data + pos);
    pos += 4;
    unsigned char marker = data[pos++];
    if (kind == 'U' && (marker == 'K' || marker == 'O')) {
        old_kind = marker;
        old = read_row_tuple(data, size, &pos);
        if (old == NULL || pos >= size) goto done;
        marker = data[pos++];
    }
    if (kind == 'D') {
        if (marker != 'K' && marker != 'O') goto done;
        old_kind = marker;
        old = read_row_tuple(data, size, &pos);
        if (old == NULL) goto done;
    } else {
        if (marker != 'N') goto done;
        new = read_row_tuple(data, size, &pos);
        if (new == NULL) goto done;
    }
    PyObject *old_kind_text = old_kind ? PyUnicode_FromOrdinal(old_kind) : Py_NewRef(Py_None);
    if (old_kind_text == NULL) goto done;
    result = Py_BuildValue("(kOONO)", (unsigned long)relation_id, new ? new : Py_None, old ? old : Py_None,
                           old_kind_text, xid ? xid : Py_None);
done:
    PyBuffer_Release(&view);
    Py_XDECREF(new);
    Py_XDECREF(old);
    Py_XDECREF(xid);
    if (result == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return result;
}

/* ---- wal_row_change ----------------------------------------------------------------------------------------- */

static uint64_t be64(const unsigned char *p) { return ((uint64_t)be32(p) << 32) | be32(p + 4); }

/* wal_row_change(data, context, makers) -> WalChange | None: a whole XLogData message ('w', data start, WAL end,
   send time, then a pgoutput Insert, Update or Delete outside a streamed transaction) as the WAL reader queues it:
   make_change(message, data start, *context) with `context` (commit LSN, xid, commit time, previous commit) and
   the message as pgoutput.decode makes it (make_insert, make_update or make_delete of row_change's fields).
   `makers`: (make_change, make_insert, make_update, make_delete). None: any other message, or a malformed one
   (the Python reader decodes it, and refuses what is malformed). */
static PyObject *wal_row_change(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3 || !PyTuple_Check(args[1]) || PyTuple_GET_SIZE(args[1]) != 4 || !PyTuple_Check(args[2]) ||
        PyTuple_GET_SIZE(args[2]) != 4) {
        PyErr_SetString(PyExc_TypeError, "wal_row_change(data, context, makers) takes a buffer and two 4-tuples");
        return NULL;
    }
    if (unchanged_toast == NULL) {
        PyErr_SetString(PyExc_RuntimeError, "configure() was not called");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *data = view.buf;
    Py_ssize_t size = view.len, pos = 26;
    PyObject *result = NULL, *new = NULL, *old = NULL, *message = NULL;
    unsigned char old_kind = 0, kind = size > 25 ? data[25] : 0;
    if (size <= 25 || data[0] != 'w' || (kind != 'I' && kind != 'U' && kind != 'D') || pos + 5 > size) goto done;
    uint64_t data_start = be64(data + 1);
    uint32_t relation_id = be32(data + pos);
    pos += 4;
    unsigned char marker = data[pos++];
    if (kind == 'U' && (marker == 'K' || marker == 'O')) {
        old_kind = marker;
        old = read_row_tuple(data, size, &pos);
        if (old == NULL || pos >= size) goto done;
        marker = data[pos++];
    }
    if (kind == 'D') {
        if (marker != 'K' && marker != 'O') goto done;
        old_kind = marker;
        old = read_row_tuple(data, size, &pos);
        if (old == NULL) goto done;
    } else {
        if (marker != 'N') goto done;
        new = read_row_tuple(data, size, &pos);
        if (new == NULL) goto done;
    }
    PyObject *relation = PyLong_FromUnsignedLong(relation_id);
    if (relation == NULL) goto done;
    PyObject *old_kind_text = old_kind ? PyUnicode_FromOrdinal(old_kind) : Py_NewRef(Py_None);
    if (old_kind_text == NULL) {
        Py_DECREF(relation);
        goto done;
    }
    PyObject *const *makers = &PyTuple_GET_ITEM(args[2], 0);
    if (kind == 'I') {
        PyObject *fields[3] = {relation, new, Py_None};
        message = PyObject_Vectorcall(makers[1], fields, 3, NULL);
    } else if (kind == 'U') {
        PyObject *fields[5] = {relation, new, old ? old : Py_None, old_kind_text, Py_None};
        message = PyObject_Vectorcall(makers[2], fields, 5, NULL);
    } else {
        PyObject *fields[4] = {relation, old, old_kind_text, Py_None};
        message = PyObject_Vectorcall(makers[3], fields, 4, NULL);
    }
    Py_DECREF(relation);
    Py_DECREF(old_kind_text);
    if (message == NULL) goto done;
    PyObject *start = PyLong_FromUnsignedLongLong(data_start);
    if (start == NULL) goto done;
    PyObject *const *context = &PyTuple_GET_ITEM(args[1], 0);
    PyObject *fields[6] = {message, start, context[0], context[1], context[2], context[3]};
    result = PyObject_Vectorcall(makers[0], fields, 6, NULL);
    Py_DECREF(start);
done:
    PyBuffer_Release(&view);
    Py_XDECREF(new);
    Py_XDECREF(old);
    Py_XDECREF(message);
    if (result == NULL && !PyErr_Occurred()) Py_RETURN_NONE;
    return result;
}

/* ---- write_row ---------------------------------------------------------------------------------------------- */

/* Whether `text` (UTF-8) is an integer as str(int(text)) writes it: no sign but '-', no leading zero, no space. */
static int canonical_integer(const char *text, Py_ssize_t length) {
    Py_ssize_t i = 0;
    if (length && text[0] == '-') i = 1;
    if (i == length) return 0;
    if (text[i] == '0') return length == i + 1 && i == 0; /* "0", never "-0" or "012" */
    for (; i < length; i++) {
        if (text[i] < '0' || text[i] > '9') return 0;
    }
    return 1;
}

static int digits(const char *text, Py_ssize_t from, Py_ssize_t to) {
    for (Py_ssize_t i = from; i < to; i++) {
        if (text[i] < '0' || text[i] > '9') return 0;
    }
    return 1;
}

/* temporal.py's zoned_timestamp_text(text, width) quoted, for a text in UTC as PostgreSQL writes it with TimeZone
   UTC ("2024-01-02 03:04:05.123+00"); 1 for any other text. `width` < 0: as few fraction digits as needed. */
static int put_utc_timestamp(Buffer *out, const char *text, Py_ssize_t length, long width) {
    static const char shape[] = "dddd-dd-dd dd:dd:dd";
    if (length < 22) return 1;
    for (int i = 0; i < 19; i++) {
        if (shape[i] == 'd' ? (text[i] < '0' || text[i] > '9') : text[i] != shape[i]) return 1;
    }
    Py_ssize_t at = 19, fraction = 0;
    if (text[at] == '.') {
        while (at + 1 + fraction < length && fraction < 7 && text[at + 1 + fraction] >= '0' &&
               text[at + 1 + fraction] <= '9') {
            fraction++;
        }
        if (fraction == 0 || fraction > 6) return 1;
        at += 1 + fraction;
    }
    Py_ssize_t rest = length - at;
    if (!((rest == 3 && memcmp(text + at, "+00", 3) == 0) || (rest == 6 && memcmp(text + at, "+00:00", 6) == 0) ||
          (rest == 9 && memcmp(text + at, "+00:00:00", 9) == 0))) {
        return 1;
    }
    char written[40];
    memcpy(written, "\"", 1);
    memcpy(written + 1, text, 10);
    written[11] = 'T';
    memcpy(written + 12, text + 11, 8);
    int n = 20;
    const char *digits_at = text + 20;
    if (width > 0 && width <= 9) {
        written[n++] = '.';
        for (long i = 0; i < width; i++) written[n++] = i < fraction ? digits_at[i] : '0';
    } else {
        Py_ssize_t kept = fraction;
        while (kept > 0 && digits_at[kept - 1] == '0') kept--;
        if (kept) {
            written[n++] = '.';
            memcpy(written + n, digits_at, (size_t)kept);
            n += (int)kept;
        }
    }
    written[n++] = 'Z';
    written[n++] = '"';
    return put(out, written, n);
}

/* types.py's double_json: a float8 text's value as Double.toString writes it; 1 for a text float() would not read
   whole, or reads as NaN or an infinity (the column's writer quotes those). */
static int put_double(Buffer *out, const char *text, Py_ssize_t length) {
    char *end;
    double value = PyOS_string_to_double(text, &end, NULL);
    if (value == -1.0 && PyErr_Occurred()) {
        PyErr_Clear();
        return 1;
    }
    if (end != text + length || !isfinite(value)) return 1;
    char written[CDC_JAVA_DOUBLE_TEXT_MAX];
    int n = java_double_of_text(written, text, length, value);
    return n < 0 ? -1 : put(out, written, n);
}

/* types.py's date_json: a date text's days since the epoch ("infinity" and "-infinity" as Debezium writes them);
   1 for any other text than PostgreSQL's ISO dates of years up to 9 digits. */
static int put_epoch_days(Buffer *out, const char *text, Py_ssize_t length) {
    long long year;
    int month, day;
    if (length == 8 && memcmp(text, "infinity", 8) == 0) {
        year = -5877611, month = 6, day = 21;
    } else if (length == 9 && memcmp(text, "-infinity", 9) == 0) {
        year = -5877611, month = 6, day = 22;
    } else {
        Py_ssize_t n = 0;
        while (n < length && text[n] >= '0' && text[n] <= '9') n++;
        if (n < 4 || n > 9 || length < n + 6 || text[n] != '-' || text[n + 3] != '-' || !digits(text, n + 1, n + 3) ||
            !digits(text, n + 4, n + 6)) {
            return 1;
        }
        int bc = length == n + 9 && memcmp(text + n + 6, " BC", 3) == 0;
        if (length != n + 6 && !bc) return 1;
        year = 0;
        for (Py_ssize_t i = 0; i < n; i++) year = year * 10 + (text[i] - '0');
        if (bc) year = 1 - year;
        month = (text[n + 1] - '0') * 10 + (text[n + 2] - '0');
        day = (text[n + 4] - '0') * 10 + (text[n + 5] - '0');
    }
    return put_int64(out, days_from_civil(year, month, day));
}

/* What `function(raw)` writes; 1 when it raised or wrote no str (the row then takes the long way), -1 on no memory. */
static int put_call(Buffer *out, PyObject *function, PyObject *raw) {
    PyObject *text = PyObject_CallOneArg(function, raw);
    if (text == NULL || !PyUnicode_Check(text)) {
        Py_XDECREF(text);
        PyErr_Clear();
        return 1;
    }
    int failed = put_str(out, text);
    Py_DECREF(text);
    if (failed) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

/* One column's JSON; 0 written, 1 long way, -1 error. */
static int put_value(Buffer *out, PyObject *raw, long kind, long argument, PyObject *function) {
    if (kind != CALL && PyUnicode_Check(raw)) {
        Py_ssize_t length;
        const char *text;
        if (PyUnicode_IS_COMPACT_ASCII(raw)) { /* most texts: their bytes are the str's own */
            text = (const char *)PyUnicode_DATA(raw);
            length = PyUnicode_GET_LENGTH(raw);
        } else {
            text = PyUnicode_AsUTF8AndSize(raw, &length);
        }
        if (text == NULL) {
            PyErr_Clear();
            return put_call(out, function, raw);
        }
        if (kind == STRING) return put_json_string(out, text, length);
        if (kind == BOOLEAN) return length == 1 && text[0] == 't' ? put(out, "true", 4) : put(out, "false", 5);
        if (kind == INTEGER && canonical_integer(text, length)) return put(out, text, length);
        int written = 1;
        if (kind == FIXED_SCALE) written = put_decimal_text(out, text, length, argument);
        if (kind == UTC_TIMESTAMP) written = put_utc_timestamp(out, text, length, argument);
        if (kind == FLOAT64) written = put_double(out, text, length);
        if (kind == EPOCH_DAYS) written = put_epoch_days(out, text, length);
        if (written != 1) return written;
    }
    return put_call(out, function, raw);
}

/* One of write_row's columns, read once for all the rows of a call (the references are borrowed from `columns`,
   which outlives the call): where its value is, its kind and argument, its writer, and the UTF-8 of its prefix and
   of its JSON for a null and for an unchanged TOASTed value (NULL: none without the row). */
typedef struct {
    Py_ssize_t position;
    long kind, argument;
    PyObject *function;
    const char *prefix, *null_text, *placeholder;
    Py_ssize_t prefix_length, null_length, placeholder_length;
} Column;

typedef struct {
    Column *items;
    Py_ssize_t length;
    int malformed; /* a column that is no (position, prefix, kind, argument, function, null text or None,
                      placeholder text or None) for rows of `count` values: every row goes the long way */
} Columns;

/* The UTF-8 of an optional str into `*text` (NULL for None): 0, or 1 for anything else. */
static int optional_utf8(PyObject *object, const char **text, Py_ssize_t *length) {
    *text = NULL;
    *length = 0;
    if (object == Py_None) return 0;
    if (!PyUnicode_Check(object) || (*text = PyUnicode_AsUTF8AndSize(object, length)) == NULL) {
        PyErr_Clear();
        return 1;
    }
    return 0;
}

/* `columns` (a tuple) read into `*read` for rows of `count` values: 0, or -1 with an exception set (no memory).
   free_columns(read) after either. */
static int read_columns(PyObject *columns, Py_ssize_t count, Columns *read) {
    Py_ssize_t n = PyTuple_GET_SIZE(columns);
    read->length = n;
    read->malformed = 0;
    read->items = PyMem_Malloc(sizeof(Column) * (size_t)(n ? n : 1));
    if (read->items == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *column = PyTuple_GET_ITEM(columns, i);
        Column *item = &read->items[i];
        if (!PyTuple_Check(column) || PyTuple_GET_SIZE(column) != 7) {
            read->malformed = 1;
            return 0;
        }
        item->position = PyLong_AsSsize_t(PyTuple_GET_ITEM(column, 0));
        item->kind = PyLong_AsLong(PyTuple_GET_ITEM(column, 2));
        item->argument = PyLong_AsLong(PyTuple_GET_ITEM(column, 3));
        item->function = PyTuple_GET_ITEM(column, 4);
        if (PyErr_Occurred() || item->position < 0 || item->position >= count ||
            !PyUnicode_Check(PyTuple_GET_ITEM(column, 1)) ||
            optional_utf8(PyTuple_GET_ITEM(column, 1), &item->prefix, &item->prefix_length) ||
            optional_utf8(PyTuple_GET_ITEM(column, 5), &item->null_text, &item->null_length) ||
            optional_utf8(PyTuple_GET_ITEM(column, 6), &item->placeholder, &item->placeholder_length)) {
            PyErr_Clear();
            read->malformed = 1;
            return 0;
        }
    }
    return 0;
}

static void free_columns(Columns *read) { PyMem_Free(read->items); }

/* read_columns of a message's row `columns` and, unless `key` is None, of its key's (key[1]): 0, or -1 with an
   exception set (no memory) and both freed. free_columns of both after 0. */
static int read_row_and_key_columns(PyObject *columns, PyObject *key, Py_ssize_t count, Columns *read,
                                    Columns *key_read) {
    *key_read = (Columns){NULL, 0, 0};
    if (read_columns(columns, count, read) < 0 ||
        (key != Py_None && read_columns(PyTuple_GET_ITEM(key, 1), count, key_read) < 0)) {
        free_columns(read);
        free_columns(key_read);
        return -1;
    }
    return 0;
}

/* The row JSON of `values` into `out`: 0 written, 1 the long way, -1 error. */
static int put_read_row(Buffer *out, PyObject *values, const Columns *columns, Py_ssize_t count) {
    if (PyTuple_GET_SIZE(values) != count || columns->malformed) return 1;
    if (put(out, "{", 1) < 0) return -1;
    int outcome = 0;
    for (Py_ssize_t i = 0; i < columns->length && outcome == 0; i++) {
        const Column *column = &columns->items[i];
        if (put(out, column->prefix, column->prefix_length) < 0) return -1;
        PyObject *raw = PyTuple_GET_ITEM(values, column->position);
        if (raw == Py_None || raw == unchanged_toast) {
            const char *text = raw == Py_None ? column->null_text : column->placeholder;
            if (text == NULL) return 1; /* no JSON without the row: the long way */
            if (put(out, text, raw == Py_None ? column->null_length : column->placeholder_length) < 0) return -1;
            continue;
        }
        outcome = put_value(out, raw, column->kind, column->argument, column->function);
    }
    if (outcome == 0 && put(out, "}", 1) < 0) return -1;
    return outcome;
}

/* put_read_row of `columns` as write_row takes them: a tuple of (position, prefix, kind, argument, function, null
   text or None, placeholder text or None). */
static int put_row(Buffer *out, PyObject *values, PyObject *columns, Py_ssize_t count) {
    Columns read;
    int outcome = read_columns(columns, count, &read);
    if (outcome == 0) outcome = put_read_row(out, values, &read, count);
    free_columns(&read);
    return outcome;
}

/* write_row(values, columns, count) -> str | None: rows.py's `write` (None: the long way). */
static PyObject *write_row(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 3) {
        PyErr_SetString(PyExc_TypeError, "write_row(values, columns, count) takes 3 arguments");
        return NULL;
    }
    PyObject *values = args[0], *columns = args[1];
    if (!PyTuple_Check(values) || !PyTuple_Check(columns)) Py_RETURN_NONE;
    Py_ssize_t count = PyLong_AsSsize_t(args[2]);
    if (count == -1 && PyErr_Occurred()) return NULL;
    Buffer out = {NULL, 0, 0};
    int outcome = put_row(&out, values, columns, count);
    PyObject *result = NULL;
    if (outcome == 0) {
        result = PyUnicode_DecodeUTF8(out.data, out.length, "strict");
    } else if (outcome == 1) {
        result = Py_NewRef(Py_None);
    }
    PyMem_Free(out.data);
    return result;
}

/* write_event(parts, values, columns, count, lsn) -> bytes | None: the UTF-8 of
   f"{parts[0]}{row}{parts[1]}{lsn}{parts[2]}{lsn}{parts[3]}" with `row` as write_row writes it (None: the long way,
   as write_row's, or an LSN that is no unsigned 64-bit int). `parts`: EnvelopeWriter.streamed_parts. */
static PyObject *write_event(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "write_event(parts, values, columns, count, lsn) takes 5 arguments");
        return NULL;
    }
    PyObject *parts = args[0], *values = args[1], *columns = args[2];
    if (!PyTuple_Check(parts) || PyTuple_GET_SIZE(parts) != 4 || !PyTuple_Check(values) || !PyTuple_Check(columns) ||
        !PyLong_Check(args[4])) {
        Py_RETURN_NONE;
    }
    for (int i = 0; i < 4; i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(parts, i))) Py_RETURN_NONE;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[3]);
    if (count == -1 && PyErr_Occurred()) return NULL;
    unsigned long long lsn = PyLong_AsUnsignedLongLong(args[4]);
    if (lsn == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        Py_RETURN_NONE;
    }
    char lsn_text[CDC_INT64_TEXT_MAX];
    int lsn_length = decimal_digits(lsn_text, lsn);
    Buffer out = {NULL, 0, 0};
    int outcome = put_str(&out, PyTuple_GET_ITEM(parts, 0));
    if (outcome == 0) outcome = put_row(&out, values, columns, count);
    if (outcome == 0) {
        outcome = put_str(&out, PyTuple_GET_ITEM(parts, 1)) < 0 || put(&out, lsn_text, lsn_length) < 0 ||
                          put_str(&out, PyTuple_GET_ITEM(parts, 2)) < 0 || put(&out, lsn_text, lsn_length) < 0 ||
                          put_str(&out, PyTuple_GET_ITEM(parts, 3)) < 0
                      ? -1
                      : 0;
    }
    PyObject *result = NULL;
    if (outcome == 0) {
        result = PyBytes_FromStringAndSize(out.data, out.length);
    } else if (outcome == 1) {
        result = Py_NewRef(Py_None);
    } else if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    PyMem_Free(out.data);
    return result;
}

/* write_text(head, values, columns, count, tail) -> bytes | None: the UTF-8 of head + the row as write_row writes it
   + tail (a message key, with or without its schema); None: the long way, as write_row's. */
static PyObject *write_text(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 5) {
        PyErr_SetString(PyExc_TypeError, "write_text(head, values, columns, count, tail) takes 5 arguments");
        return NULL;
    }
    if (!PyUnicode_Check(args[0]) || !PyTuple_Check(args[1]) || !PyTuple_Check(args[2]) || !PyUnicode_Check(args[4])) {
        Py_RETURN_NONE;
    }
    Py_ssize_t count = PyLong_AsSsize_t(args[3]);
    if (count == -1 && PyErr_Occurred()) return NULL;
    Buffer out = {NULL, 0, 0};
    int outcome = put_str(&out, args[0]);
    if (outcome == 0) outcome = put_row(&out, args[1], args[2], count);
    if (outcome == 0 && put_str(&out, args[4]) < 0) outcome = -1;
    PyObject *result = NULL;
    if (outcome == 0) {
        result = PyBytes_FromStringAndSize(out.data, out.length);
    } else if (outcome == 1) {
        result = Py_NewRef(Py_None);
    } else if (!PyErr_Occurred()) {
        PyErr_NoMemory();
    }
    PyMem_Free(out.data);
    return result;
}

/* ---- write_run ---------------------------------------------------------------------------------------------- */

static PyObject *name_message, *name_relation_id, *name_commit_lsn, *name_lsn, *name_new, *name_old;

/* Whether `object.name` equals `expected` (0 no, 1 yes, -1 error). */
static int attribute_equals(PyObject *object, PyObject *name, PyObject *expected) {
    PyObject *value = PyObject_GetAttr(object, name);
    if (value == NULL) return -1;
    int equal = value == expected ? 1 : PyObject_RichCompareBool(value, expected, Py_EQ);
    Py_DECREF(value);
    return equal;
}

/* The key (write_text's bytes for `key`'s (head, columns, tail), its columns read into `key_columns`; nothing when
   `key` is None) and the value (write_event's for `parts` and `columns`) of the row `values` into `key_out` and
   `value_out` (their lengths reset first): 0 written, 1 the long way, -1 error. */
static int put_message(PyObject *values, PyObject *parts, const Columns *columns, Py_ssize_t count, PyObject *key,
                       const Columns *key_columns, unsigned long long lsn, Buffer *key_out, Buffer *value_out) {
    int outcome;
    key_out->length = value_out->length = 0;
    if (key != Py_None) {
        outcome = put_str(key_out, PyTuple_GET_ITEM(key, 0));
        if (outcome == 0) outcome = put_read_row(key_out, values, key_columns, count);
        if (outcome == 0) outcome = put_str(key_out, PyTuple_GET_ITEM(key, 2));
        if (outcome != 0) return outcome;
    }
    char lsn_text[CDC_INT64_TEXT_MAX];
    int lsn_length = decimal_digits(lsn_text, lsn);
    outcome = put_str(value_out, PyTuple_GET_ITEM(parts, 0));
    if (outcome == 0) outcome = put_read_row(value_out, values, columns, count);
    if (outcome == 0) {
        outcome = put_str(value_out, PyTuple_GET_ITEM(parts, 1)) < 0 || put(value_out, lsn_text, lsn_length) < 0 ||
                          put_str(value_out, PyTuple_GET_ITEM(parts, 2)) < 0 ||
                          put(value_out, lsn_text, lsn_length) < 0 || put_str(value_out, PyTuple_GET_ITEM(parts, 3)) < 0
                      ? -1
                      : 0;
    }
    return outcome;
}

/* make(topic, key, value, None) of the texts in `key_out` (None when `key` is None) and `value_out`, appended to
   `messages`: 0, or -1 with an error set. */
static int append_message(PyObject *make, PyObject *topic, PyObject *key, Buffer *key_out, Buffer *value_out,
                          PyObject *messages) {
    PyObject *made[4] = {topic, NULL, NULL, Py_None};
    made[1] = key == Py_None ? Py_NewRef(Py_None) : PyBytes_FromStringAndSize(key_out->data, key_out->length);
    made[2] = made[1] == NULL ? NULL : PyBytes_FromStringAndSize(value_out->data, value_out->length);
    PyObject *message = made[2] == NULL ? NULL : PyObject_Vectorcall(make, made, 4, NULL);
    Py_XDECREF(made[1]);
    Py_XDECREF(made[2]);
    int failed = message == NULL || PyList_Append(messages, message) < 0;
    Py_XDECREF(message);
    return failed ? -1 : 0;
}

/* One change of a run into `key_out` and `value_out` (their lengths reset): 0 written, 1 not this run's or the long
   way, -1 error. */
static int write_run_change(PyObject *change, PyObject *kind, int update, PyObject *relation_id, PyObject *commit_lsn,
                            PyObject *parts, const Columns *columns, Py_ssize_t count, PyObject *key,
                            const Columns *key_columns, Buffer *key_out, Buffer *value_out) {
    PyObject *message = PyObject_GetAttr(change, name_message);
    if (message == NULL) return -1;
    PyObject *values = NULL;
    int outcome = 1;
    if ((PyObject *)Py_TYPE(message) != kind) goto done;
    if (update) {
        PyObject *old = PyObject_GetAttr(message, name_old);
        if (old == NULL) goto failed;
        Py_DECREF(old);
        if (old != Py_None) goto done;
    }
    int equal = attribute_equals(message, name_relation_id, relation_id);
    if (equal <= 0) goto checked;
    equal = attribute_equals(change, name_commit_lsn, commit_lsn);
    if (equal <= 0) goto checked;
    values = PyObject_GetAttr(message, name_new);
    if (values == NULL) goto failed;
    if (!PyTuple_Check(values)) goto done;
    PyObject *lsn_object = PyObject_GetAttr(change, name_lsn);
    if (lsn_object == NULL) goto failed;
    unsigned long long lsn = PyLong_Check(lsn_object) ? PyLong_AsUnsignedLongLong(lsn_object) : (unsigned long long)-1;
    Py_DECREF(lsn_object);
    if (lsn == (unsigned long long)-1) {
        PyErr_Clear();
        goto done; /* the per-change writer decides */
    }
    outcome = put_message(values, parts, columns, count, key, key_columns, lsn, key_out, value_out);
    goto done;
checked:
    outcome = equal < 0 ? -1 : 1;
    goto done;
failed:
    outcome = -1;
done:
    Py_DECREF(message);
    Py_XDECREF(values);
    if (outcome == -1 && !PyErr_Occurred()) PyErr_NoMemory();
    return outcome;
}

/* write_run(changes, start, kind, relation_id, commit_lsn, parts, columns, count, key, topic, make, messages,
   update) -> end: from changes[start] on, every change whose message is a `kind` (Insert; Update when `update`, then
   only those without an old tuple) of
   `relation_id` in the transaction of `commit_lsn` becomes make(topic, key, value, None), appended to `messages`, with
   the value write_event(parts, new, columns, count, lsn) writes and the key write_text(*key's head, new, key's
   columns, count, key's tail) writes (None when `key` is None). Ends at the first other change, or one either
   writer would send the long way (which the caller's per-change path takes); returns its index. */
static PyObject *write_run(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 13) {
        PyErr_SetString(PyExc_TypeError,
                        "write_run(changes, start, kind, relation_id, commit_lsn, parts, columns, count, key, topic, "
                        "make, messages, update) takes 13 arguments");
        return NULL;
    }
    PyObject *changes = args[0], *kind = args[2], *relation_id = args[3], *commit_lsn = args[4], *parts = args[5],
             *columns = args[6], *key = args[8], *topic = args[9], *make = args[10], *messages = args[11];
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t count = PyLong_AsSsize_t(args[7]);
    if (count == -1 && PyErr_Occurred()) return NULL;
    if (!PyList_Check(changes) || !PyList_Check(messages) || !PyType_Check(kind) || !PyTuple_Check(parts) ||
        PyTuple_GET_SIZE(parts) != 4 || !PyTuple_Check(columns) ||
        (key != Py_None && (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 3 ||
                            !PyUnicode_Check(PyTuple_GET_ITEM(key, 0)) || !PyTuple_Check(PyTuple_GET_ITEM(key, 1)) ||
                            !PyUnicode_Check(PyTuple_GET_ITEM(key, 2))))) {
        return PyLong_FromSsize_t(start); /* nothing written: the per-change path */
    }
    for (int i = 0; i < 4; i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(parts, i))) return PyLong_FromSsize_t(start);
    }
    if (name_message == NULL) {
        name_message = PyUnicode_InternFromString("message");
        name_relation_id = PyUnicode_InternFromString("relation_id");
        name_commit_lsn = PyUnicode_InternFromString("commit_lsn");
        name_lsn = PyUnicode_InternFromString("lsn");
        name_new = PyUnicode_InternFromString("new");
        name_old = PyUnicode_InternFromString("old");
        if (!name_message || !name_relation_id || !name_commit_lsn || !name_lsn || !name_new || !name_old) {
            Py_CLEAR(name_message);
            return NULL;
        }
    }
    int update = PyObject_IsTrue(args[12]);
    if (update < 0) return NULL;
    Columns read, key_read;
    if (read_row_and_key_columns(columns, key, count, &read, &key_read) < 0) return NULL;
    Buffer key_out = {NULL, 0, 0}, value_out = {NULL, 0, 0};
    Py_ssize_t at = start;
    int failed = 0;
    for (; at < PyList_GET_SIZE(changes); at++) {
        int outcome = write_run_change(PyList_GET_ITEM(changes, at), kind, update, relation_id, commit_lsn, parts,
                                       &read, count, key, &key_read, &key_out, &value_out);
        if (outcome != 0) {
            failed = outcome < 0;
            break;
        }
        if (append_message(make, topic, key, &key_out, &value_out, messages) < 0) {
            failed = 1;
            break;
        }
    }
    PyMem_Free(key_out.data);
    PyMem_Free(value_out.data);
    free_columns(&read);
    free_columns(&key_read);
    return failed ? NULL : PyLong_FromSsize_t(at);
}

/* Whether `key` is None or a (head str, columns tuple, tail str) and `parts` four strs: what write_run and
   write_rows write with. */
static int message_shapes(PyObject *parts, PyObject *columns, PyObject *key) {
    if (!PyTuple_Check(parts) || PyTuple_GET_SIZE(parts) != 4 || !PyTuple_Check(columns)) return 0;
    if (key != Py_None && (!PyTuple_Check(key) || PyTuple_GET_SIZE(key) != 3 || !PyUnicode_Check(PyTuple_GET_ITEM(key, 0)) ||
                           !PyTuple_Check(PyTuple_GET_ITEM(key, 1)) || !PyUnicode_Check(PyTuple_GET_ITEM(key, 2)))) {
        return 0;
    }
    for (int i = 0; i < 4; i++) {
        if (!PyUnicode_Check(PyTuple_GET_ITEM(parts, i))) return 0;
    }
    return 1;
}

/* ---- write_rows --------------------------------------------------------------------------------------------- */

/* Leaves a tuple of strs and Nones (a fetched row) out of the cyclic collector, as the collector itself does with
   such a tuple after walking it once: a chunk's rows stay alive until it commits, and each young collection meanwhile
   walked every column of each. */
static void untrack_texts(PyObject *values) {
    if (!PyObject_GC_IsTracked(values)) return;
    for (Py_ssize_t i = 0, n = PyTuple_GET_SIZE(values); i < n; i++) {
        PyObject *item = PyTuple_GET_ITEM(values, i);
        if (item != Py_None && !PyUnicode_CheckExact(item)) return;
    }
    PyObject_GC_UnTrack(values);
}

/* write_rows(rows, start, end, parts, columns, count, key, lsn, topic, make, messages) -> stop: rows[start:end],
   every row (a tuple of texts, as the snapshot's cursor reads them) becomes make(topic, key, value, None), appended
   to `messages`, with the value write_event(parts, row, columns, count, lsn) writes and the key write_text(*key's
   head, row, key's columns, count, key's tail) writes (None when `key` is None): a snapshot chunk's rows in one
   call; a row written is left out of the cyclic collector (untrack_texts). Stops at the first row either writer
   would send the long way, or that is no tuple (which the caller writes by itself); returns its index (`end` when
   every row was written). */
static PyObject *write_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 11) {
        PyErr_SetString(PyExc_TypeError,
                        "write_rows(rows, start, end, parts, columns, count, key, lsn, topic, make, messages) takes 11 "
                        "arguments");
        return NULL;
    }
    PyObject *rows = args[0], *parts = args[3], *columns = args[4], *key = args[6], *topic = args[8],
             *make = args[9], *messages = args[10];
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t end = PyLong_AsSsize_t(args[2]);
    if (end == -1 && PyErr_Occurred()) return NULL;
    Py_ssize_t count = PyLong_AsSsize_t(args[5]);
    if (count == -1 && PyErr_Occurred()) return NULL;
    if (!PyList_Check(rows) || !PyList_Check(messages) || !message_shapes(parts, columns, key) ||
        !PyLong_Check(args[7]) || start < 0) {
        return PyLong_FromSsize_t(start); /* nothing written: the per-row path */
    }
    unsigned long long lsn = PyLong_AsUnsignedLongLong(args[7]);
    if (lsn == (unsigned long long)-1 && PyErr_Occurred()) {
        PyErr_Clear();
        return PyLong_FromSsize_t(start);
    }
    Columns read, key_read;
    if (read_row_and_key_columns(columns, key, count, &read, &key_read) < 0) return NULL;
    Buffer key_out = {NULL, 0, 0}, value_out = {NULL, 0, 0};
    Py_ssize_t at = start;
    int failed = 0;
    for (; at < end && at < PyList_GET_SIZE(rows); at++) {
        PyObject *values = PyList_GET_ITEM(rows, at);
        if (!PyTuple_Check(values)) break;
        Py_INCREF(values);
        int outcome = put_message(values, parts, &read, count, key, &key_read, lsn, &key_out, &value_out);
        if (outcome == 0) outcome = append_message(make, topic, key, &key_out, &value_out, messages);
        if (outcome == 0) untrack_texts(values);
        Py_DECREF(values);
        if (outcome != 0) {
            failed = outcome < 0;
            break;
        }
    }
    PyMem_Free(key_out.data);
    PyMem_Free(value_out.data);
    free_columns(&read);
    free_columns(&key_read);
    if (failed && !PyErr_Occurred()) PyErr_NoMemory();
    return failed ? NULL : PyLong_FromSsize_t(at);
}

static PyObject *configure(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "configure(unchanged_toast, error_type) takes 2 arguments");
        return NULL;
    }
    Py_XSETREF(unchanged_toast, Py_NewRef(args[0]));
    Py_XSETREF(pgoutput_error, Py_NewRef(args[1]));
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"configure", (PyCFunction)(void (*)(void))configure, METH_FASTCALL, "configure(unchanged_toast, error_type)"},
    {"tuple_data", (PyCFunction)(void (*)(void))tuple_data, METH_FASTCALL, "tuple_data(data, pos) -> (values, pos)"},
    {"row_change", (PyCFunction)(void (*)(void))row_change, METH_FASTCALL,
     "row_change(data, in_stream) -> (relation_id, new, old, old_kind, xid) | None"},
    {"write_row", (PyCFunction)(void (*)(void))write_row, METH_FASTCALL,
     "write_row(values, columns, count) -> str | None"},
    {"write_event", (PyCFunction)(void (*)(void))write_event, METH_FASTCALL,
     "write_event(parts, values, columns, count, lsn) -> bytes | None"},
    {"write_text", (PyCFunction)(void (*)(void))write_text, METH_FASTCALL,
     "write_text(head, values, columns, count, tail) -> bytes | None"},
    {"write_run", (PyCFunction)(void (*)(void))write_run, METH_FASTCALL,
     "write_run(changes, start, kind, relation_id, commit_lsn, parts, columns, count, key, topic, make, messages, "
     "update) -> end"},
    {"write_rows", (PyCFunction)(void (*)(void))write_rows, METH_FASTCALL,
     "write_rows(rows, start, end, parts, columns, count, key, lsn, topic, make, messages) -> stop"},
    {"wal_row_change", (PyCFunction)(void (*)(void))wal_row_change, METH_FASTCALL,
     "wal_row_change(data, context, makers) -> WalChange | None"},
    {"slots_maker", (PyCFunction)(void (*)(void))slots_maker, METH_FASTCALL, "slots_maker(cls, names) -> maker"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {PyModuleDef_HEAD_INIT, "_pgrows", NULL, -1, methods};

PyMODINIT_FUNC PyInit__pgrows(void) {
    if (PyType_Ready(&MakerType) < 0) return NULL;
    return PyModule_Create(&module_definition);
}
