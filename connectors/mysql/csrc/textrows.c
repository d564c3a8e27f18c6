/* text_rows (connectors/mysql/text_rows.py): the rows of a SELECT's result set in MySQL's text protocol, read
   packet by packet from the connection's buffered socket file and decoded as pymysql decodes them (the same tuple
   of the same values): each column a length-encoded string or NULL, an integer column's text made an int, a text
   column's bytes decoded as UTF-8, a binary column's kept as bytes, any other column's handed to the Python
   callable text_rows.py gives for it (pymysql's own converter). Reading stops after the packet that ends the rows
   (EOF or error), which is returned for pymysql to read. */

#include "textrows.h"

#include <datetime.h>
#include <stdint.h>
#include <string.h>

#include "connect_values.h"

/* text_rows.py's column kinds */
enum {
    TEXT_INTEGER = 0, TEXT_UTF8 = 1, TEXT_BYTES = 2, TEXT_CALL = 3, TEXT_DATE = 4, TEXT_DATETIME = 5, TEXT_DECIMAL = 6,
    TEXT_FLOAT = 7
};
static PyObject *text_decimal_type; /* decimal.Decimal */
#define WHOLE_PACKET 0xffffff /* a payload this long continues in the next packet */

/* `n` bytes read from the socket file, or NULL with an exception (the server closed the connection mid-packet:
   ConnectionResetError, as an OSError pymysql's own read would have met). */
static PyObject *read_exactly(PyObject *read, Py_ssize_t n) {
    PyObject *count = PyLong_FromSsize_t(n);
    if (count == NULL) return NULL;
    PyObject *data = PyObject_CallOneArg(read, count);
    Py_DECREF(count);
    if (data == NULL) return NULL;
    if (!PyBytes_Check(data) || PyBytes_GET_SIZE(data) != n) {
        Py_DECREF(data);
        PyErr_SetString(PyExc_ConnectionResetError, "the server closed the connection in the middle of a packet");
        return NULL;
    }
    return data;
}

/* One protocol packet's payload (a payload of 16 MB or more joined from its packets); `sequence` is checked and
   advanced as pymysql does. */
static PyObject *read_packet(PyObject *read, int *sequence) {
    PyObject *payload = NULL;
    for (;;) {
        PyObject *header = read_exactly(read, 4);
        if (header == NULL) goto failed;
        const unsigned char *h = (const unsigned char *)PyBytes_AS_STRING(header);
        Py_ssize_t length = h[0] | (h[1] << 8) | (h[2] << 16);
        int number = h[3];
        Py_DECREF(header);
        if (number != *sequence) {
            PyErr_Format(PyExc_ValueError, "packet sequence number wrong - got %d expected %d", number, *sequence);
            goto failed;
        }
        *sequence = (*sequence + 1) % 256;
        PyObject *body = read_exactly(read, length);
        if (body == NULL) goto failed;
        if (payload == NULL) {
            payload = body;
        } else {
            PyBytes_ConcatAndDel(&payload, body);
            if (payload == NULL) return NULL;
        }
        if (length < WHOLE_PACKET) return payload;
    }
failed:
    Py_XDECREF(payload);
    return NULL;
}

static PyObject *malformed(void) {
    PyErr_SetString(PyExc_ValueError, "a result row the text protocol does not describe");
    return NULL;
}

static PyObject *integer(const char *text, Py_ssize_t length) {
    char digits[32];
    if (length == 0 || length >= (Py_ssize_t)sizeof digits) { /* int() of the text says what is wrong with it */
        PyObject *string = PyUnicode_DecodeASCII(text, length, "strict");
        if (string == NULL) return NULL;
        PyObject *value = PyLong_FromUnicodeObject(string, 10);
        Py_DECREF(string);
        return value;
    }
    memcpy(digits, text, length);
    digits[length] = '\0';
    char *end;
    PyObject *value = PyLong_FromString(digits, &end, 10);
    if (value != NULL && end != digits + length) {
        Py_DECREF(value);
        PyErr_Format(PyExc_ValueError, "invalid literal for int() with base 10: '%s'", digits);
        return NULL;
    }
    return value;
}

int text_rows_init(PyObject *decimal_type) {
    PyDateTime_IMPORT;
    if (PyDateTimeAPI == NULL) return -1;
    text_decimal_type = decimal_type;
    return 0;
}

/* The number `count` ASCII digits at `text` write; -1 when one is no digit. */
static int number_at(const char *text, int count) {
    int value = 0;
    for (int i = 0; i < count; i++) {
        if (text[i] < '0' || text[i] > '9') return -1;
        value = value * 10 + (text[i] - '0');
    }
    return value;
}

/* A DATE's text "YYYY-MM-DD" as pymysql's convert_date makes it: a date; NULL without an exception for any other
   text (convert_date says what it makes of it). */
static PyObject *date_value(const char *text, Py_ssize_t length) {
    if (length != 10 || text[4] != '-' || text[7] != '-') return NULL;
    int year = number_at(text, 4), month = number_at(text + 5, 2), day = number_at(text + 8, 2);
    if (year < 0 || month < 0 || day < 0 || !valid_date(year, month, day)) return NULL;
    return PyDate_FromDate(year, month, day);
}

/* A DATETIME's or TIMESTAMP's text "YYYY-MM-DD HH:MM:SS[.f{1,6}]" as pymysql's convert_datetime makes it: a
   datetime, its fraction's digits padded to microseconds; NULL without an exception for any other text. */
static PyObject *datetime_value(const char *text, Py_ssize_t length) {
    if (length < 19 || length == 20 || length > 26 || text[10] != ' ' || text[13] != ':' || text[16] != ':' ||
        (length > 19 && text[19] != '.'))
        return NULL;
    int hour = number_at(text + 11, 2), minute = number_at(text + 14, 2), second = number_at(text + 17, 2);
    long micro = 0;
    for (Py_ssize_t i = 20; i < 26; i++) {
        int digit = i < length ? number_at(text + i, 1) : 0;
        if (digit < 0) return NULL;
        micro = micro * 10 + digit;
    }
    int year = number_at(text, 4), month = number_at(text + 5, 2), day = number_at(text + 8, 2);
    if (text[4] != '-' || text[7] != '-' || year < 0 || month < 0 || day < 0 || !valid_date(year, month, day) ||
        hour < 0 || minute < 0 || second < 0 || !valid_time(hour, minute, second, micro))
        return NULL;
    return PyDateTime_FromDateAndTime(year, month, day, hour, minute, second, (int)micro);
}

/* `convert(text.decode("ascii"))`, as pymysql converts a DECIMAL's (Decimal) or a DOUBLE's or FLOAT's (float). */
static PyObject *ascii_converted(const char *text, Py_ssize_t length, int kind) {
    PyObject *string = PyUnicode_DecodeASCII(text, length, "strict");
    if (string == NULL) return NULL;
    PyObject *value = kind == TEXT_FLOAT ? PyFloat_FromString(string) : PyObject_CallOneArg(text_decimal_type, string);
    Py_DECREF(string);
    return value;
}

static PyObject *row(const unsigned char *at, Py_ssize_t size, const char *kinds, Py_ssize_t count, PyObject *calls) {
    PyObject *values = PyTuple_New(count);
    if (values == NULL) return NULL;
    Py_ssize_t pos = 0;
    for (Py_ssize_t i = 0; i < count; i++) {
        if (pos >= size) goto bad;
        unsigned int lead = at[pos++];
        PyObject *value;
        if (lead == 0xfb) {
            value = Py_NewRef(Py_None);
        } else {
            uint64_t length = lead;
            int width = lead == 0xfc ? 2 : lead == 0xfd ? 3 : lead == 0xfe ? 8 : lead == 0xff ? -1 : 0;
            if (width < 0 || pos + width > size) goto bad;
            if (width) {
                length = 0;
                for (int b = width - 1; b >= 0; b--) length = (length << 8) | at[pos + b];
                pos += width;
            }
            if (length > (uint64_t)(size - pos)) goto bad;
            const char *text = (const char *)at + pos;
            pos += (Py_ssize_t)length;
            switch (kinds[i]) {
            case TEXT_INTEGER:
                value = integer(text, (Py_ssize_t)length);
                break;
            case TEXT_UTF8:
                value = PyUnicode_DecodeUTF8(text, (Py_ssize_t)length, "strict");
                break;
            case TEXT_BYTES:
                value = PyBytes_FromStringAndSize(text, (Py_ssize_t)length);
                break;
            case TEXT_DECIMAL: case TEXT_FLOAT:
                value = ascii_converted(text, (Py_ssize_t)length, kinds[i]);
                break;
            case TEXT_DATE: case TEXT_DATETIME:
                value = kinds[i] == TEXT_DATE ? date_value(text, (Py_ssize_t)length)
                                              : datetime_value(text, (Py_ssize_t)length);
                if (value != NULL || PyErr_Occurred()) break;
                /* fall through: pymysql's converter makes what it makes of another text */
            default: {
                PyObject *raw = PyBytes_FromStringAndSize(text, (Py_ssize_t)length);
                if (raw == NULL) goto failed;
                value = PyObject_CallOneArg(PyTuple_GET_ITEM(calls, i), raw);
                Py_DECREF(raw);
            }
            }
        }
        if (value == NULL) goto failed;
        PyTuple_SET_ITEM(values, i, value);
    }
    return values;
bad:
    malformed();
failed:
    Py_DECREF(values);
    return NULL;
}

/* text_rows(read, sequence, kinds, calls) -> (rows, last packet's payload, next sequence number) */
PyObject *text_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyLong_Check(args[1]) || !PyBytes_Check(args[2]) || !PyTuple_Check(args[3])
        || PyTuple_GET_SIZE(args[3]) != PyBytes_GET_SIZE(args[2])) {
        PyErr_SetString(PyExc_TypeError, "text_rows(read, sequence, kinds, calls)");
        return NULL;
    }
    PyObject *read = args[0];
    int sequence = (int)(PyLong_AsLong(args[1]) % 256);
    if (PyErr_Occurred()) return NULL;
    const char *kinds = PyBytes_AS_STRING(args[2]);
    Py_ssize_t count = PyBytes_GET_SIZE(args[2]);
    PyObject *rows = PyList_New(0);
    if (rows == NULL) return NULL;
    for (;;) {
        PyObject *payload = read_packet(read, &sequence);
        if (payload == NULL) goto failed;
        const unsigned char *at = (const unsigned char *)PyBytes_AS_STRING(payload);
        Py_ssize_t size = PyBytes_GET_SIZE(payload);
        if (size > 0 && (at[0] == 0xff || (at[0] == 0xfe && size < 9))) { /* error, or EOF: the rows' end */
            PyObject *result = Py_BuildValue("(NNi)", rows, payload, sequence);
            return result;
        }
        PyObject *values = row(at, size, kinds, count, args[3]);
        Py_DECREF(payload);
        if (values == NULL) goto failed;
        int appended = PyList_Append(rows, values);
        Py_DECREF(values);
        if (appended < 0) goto failed;
    }
failed:
    Py_DECREF(rows);
    return NULL;
}
