/* Verify's reading of one record of a MongoDB connector's topic (connectors/mongodb/verify_events.py): the op, the
   `after` text and the source block's ts_ms, ord and snapshot of a Debezium change event's JSON value, read without
   building the rest of it. Whatever this code is not sure to read as the Python path does (a schema wrapping, a
   repeated or unexpected field, an escaped lone surrogate, a number that is not a 64-bit integer, malformed JSON) it
   leaves to that path, which reads the whole value, or refuses it. */

#include "verify_event.h"

#include "writer.h"

#define MAX_DEPTH 64

typedef struct {
    const unsigned char *at, *end;
} Reader;

static void skip_space(Reader *r) {
    while (r->at < r->end && (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r')) r->at++;
}

static int take(Reader *r, unsigned char c) {
    skip_space(r);
    if (r->at >= r->end || *r->at != c) return -1;
    r->at++;
    return 0;
}

static int hex_digit(unsigned char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The four hex digits of a \\u escape at the reader (past its \\u). */
static int read_unit(Reader *r, uint32_t *code) {
    if (r->end - r->at < 4) return -1;
    *code = 0;
    for (int k = 0; k < 4; k++) {
        int digit = hex_digit(r->at[k]);
        if (digit < 0) return -1;
        *code = (*code << 4) | (uint32_t)digit;
    }
    r->at += 4;
    return 0;
}

static int put_code_point(Buffer *out, uint32_t code) {
    char bytes[4];
    size_t size;
    if (code < 0x80) {
        bytes[0] = (char)code, size = 1;
    } else if (code < 0x800) {
        bytes[0] = (char)(0xC0 | (code >> 6)), bytes[1] = (char)(0x80 | (code & 0x3F)), size = 2;
    } else if (code < 0x10000) {
        bytes[0] = (char)(0xE0 | (code >> 12)), bytes[1] = (char)(0x80 | ((code >> 6) & 0x3F));
        bytes[2] = (char)(0x80 | (code & 0x3F)), size = 3;
    } else {
        bytes[0] = (char)(0xF0 | (code >> 18)), bytes[1] = (char)(0x80 | ((code >> 12) & 0x3F));
        bytes[2] = (char)(0x80 | ((code >> 6) & 0x3F)), bytes[3] = (char)(0x80 | (code & 0x3F)), size = 4;
    }
    return put(out, bytes, size);
}

/* The string at the reader (after spaces), unescaped into `out` when it is not NULL (its UTF-8). 0 when read, -1
   when not (malformed, or a \u escape of a lone surrogate), -2 out of memory. */
static int read_string(Reader *r, Buffer *out) {
    if (take(r, '"') < 0) return -1;
    while (r->at < r->end) {
        const unsigned char *run = r->at;
        while (r->at < r->end && *r->at >= 0x20 && *r->at < 0x80 && *r->at != '"' && *r->at != '\\') r->at++;
        if (out != NULL && r->at > run && put(out, (const char *)run, (size_t)(r->at - run)) < 0) return -2;
        if (r->at >= r->end) return -1;
        unsigned char c = *r->at;
        if (c == '"') {
            r->at++;
            return 0;
        }
        if (c < 0x20) return -1;
        if (c >= 0x80) {
            uint32_t code;
            size_t size = read_utf8(r->at, (size_t)(r->end - r->at), &code);
            if (size == 0) return -1;
            if (out != NULL && put(out, (const char *)r->at, size) < 0) return -2;
            r->at += size;
            continue;
        }
        if (r->end - r->at < 2) return -1; /* a backslash */
        unsigned char escaped = r->at[1];
        uint32_t code;
        r->at += 2;
        switch (escaped) {
            case '"': code = '"'; break;
            case '\\': code = '\\'; break;
            case '/': code = '/'; break;
            case 'b': code = '\b'; break;
            case 'f': code = '\f'; break;
            case 'n': code = '\n'; break;
            case 'r': code = '\r'; break;
            case 't': code = '\t'; break;
            case 'u': {
                if (read_unit(r, &code) < 0) return -1;
                if (code >= 0xDC00 && code <= 0xDFFF) return -1; /* a lone low surrogate */
                if (code >= 0xD800 && code <= 0xDBFF) {            /* a pair's high surrogate, its low one next */
                    uint32_t low;
                    if (r->end - r->at < 2 || r->at[0] != '\\' || r->at[1] != 'u') return -1;
                    r->at += 2;
                    if (read_unit(r, &low) < 0 || low < 0xDC00 || low > 0xDFFF) return -1;
                    code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                }
                break;
            }
            default: return -1;
        }
        if (out != NULL && put_code_point(out, code) < 0) return -2;
    }
    return -1;
}

/* A number at the reader (after spaces); *integer 1 with *value when it is an integer of at most 18 digits. */
static int read_number(Reader *r, int *integer, long long *value) {
    skip_space(r);
    int negative = r->at < r->end && *r->at == '-';
    if (negative) r->at++;
    const unsigned char *digits = r->at;
    if (r->at >= r->end || *r->at < '0' || *r->at > '9') return -1;
    if (*r->at == '0') {
        r->at++;
    } else {
        while (r->at < r->end && *r->at >= '0' && *r->at <= '9') r->at++;
    }
    size_t count = (size_t)(r->at - digits);
    *integer = count <= 18;
    if (r->at < r->end && *r->at == '.') {
        r->at++;
        if (r->at >= r->end || *r->at < '0' || *r->at > '9') return -1;
        while (r->at < r->end && *r->at >= '0' && *r->at <= '9') r->at++;
        *integer = 0;
    }
    if (r->at < r->end && (*r->at == 'e' || *r->at == 'E')) {
        r->at++;
        if (r->at < r->end && (*r->at == '+' || *r->at == '-')) r->at++;
        if (r->at >= r->end || *r->at < '0' || *r->at > '9') return -1;
        while (r->at < r->end && *r->at >= '0' && *r->at <= '9') r->at++;
        *integer = 0;
    }
    if (*integer) {
        long long n = 0;
        for (size_t k = 0; k < count; k++) n = n * 10 + (digits[k] - '0');
        *value = negative ? -n : n;
    }
    return 0;
}

static int read_literal(Reader *r, const char *literal, size_t length) {
    skip_space(r);
    if ((size_t)(r->end - r->at) < length || memcmp(r->at, literal, length) != 0) return -1;
    r->at += length;
    return 0;
}

static int at_char(Reader *r, unsigned char c) {
    skip_space(r);
    return r->at < r->end && *r->at == c;
}

static int skip_value(Reader *r, int depth);

/* The members of the object or array whose opening character the reader is at, skipped. */
static int skip_container(Reader *r, int depth) {
    unsigned char close = *r->at == '{' ? '}' : ']';
    int object = close == '}';
    r->at++;
    if (at_char(r, close)) {
        r->at++;
        return 0;
    }
    for (;;) {
        if (object && (read_string(r, NULL) < 0 || take(r, ':') < 0)) return -1;
        if (skip_value(r, depth + 1) < 0) return -1;
        if (at_char(r, ',')) {
            r->at++;
            continue;
        }
        return take(r, close);
    }
}

static int skip_value(Reader *r, int depth) {
    if (depth > MAX_DEPTH) return -1;
    skip_space(r);
    if (r->at >= r->end) return -1;
    int integer;
    long long value;
    switch (*r->at) {
        case '"': return read_string(r, NULL) == 0 ? 0 : -1;
        case '{':
        case '[': return skip_container(r, depth);
        case 't': return read_literal(r, "true", 4);
        case 'f': return read_literal(r, "false", 5);
        case 'n': return read_literal(r, "null", 4);
        default: return read_number(r, &integer, &value);
    }
}

/* A str from the UTF-8 buffer; NULL with no exception set when it is not one (never: read_string checks). */
static PyObject *buffer_text(const Buffer *text) {
    PyObject *result = PyUnicode_DecodeUTF8(text->data, (Py_ssize_t)text->length, "strict");
    if (result == NULL && PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) PyErr_Clear();
    return result;
}

/* A source block's field Verify places events by: a string, an integer of 64 bits or null. NULL with no exception
   when it is another value, NULL with one on error. */
static PyObject *read_source_value(Reader *r, Buffer *text) {
    skip_space(r);
    if (r->at >= r->end) return NULL;
    if (*r->at == '"') {
        text->length = 0;
        int read = read_string(r, text);
        if (read == -2) return PyErr_NoMemory();
        return read == 0 ? buffer_text(text) : NULL;
    }
    if (*r->at == 'n') return read_literal(r, "null", 4) == 0 ? Py_NewRef(Py_None) : NULL;
    int integer;
    long long value;
    if (*r->at != '-' && (*r->at < '0' || *r->at > '9')) return NULL;
    if (read_number(r, &integer, &value) < 0 || !integer) return NULL;
    return PyLong_FromLongLong(value);
}

static const char *const SOURCE_FIELDS[] = {"ts_ms", "ord", "snapshot"};

/* The source block at the reader: a dict of its ts_ms, ord and snapshot (those present). NULL with no exception
   when this code does not read it. */
static PyObject *read_source(Reader *r, Buffer *text) {
    skip_space(r);
    if (r->at < r->end && *r->at == 'n') return read_literal(r, "null", 4) == 0 ? PyDict_New() : NULL;
    if (take(r, '{') < 0) return NULL;
    PyObject *source = PyDict_New();
    if (source == NULL) return NULL;
    if (at_char(r, '}')) {
        r->at++;
        return source;
    }
    for (;;) {
        text->length = 0;
        int read = read_string(r, text);
        if (read == -2) PyErr_NoMemory();
        if (read < 0 || take(r, ':') < 0) goto fail;
        int field = -1;
        for (int k = 0; k < 3; k++)
            if (text->length == strlen(SOURCE_FIELDS[k]) && memcmp(text->data, SOURCE_FIELDS[k], text->length) == 0)
                field = k;
        if (field < 0) {
            if (skip_value(r, 2) < 0) goto fail;
        } else {
            PyObject *value = read_source_value(r, text);
            if (value == NULL) goto fail;
            static PyObject *names[3];
            if (names[field] == NULL) names[field] = PyUnicode_InternFromString(SOURCE_FIELDS[field]);
            PyObject *name = names[field];
            /* a repeated field: the Python path reads its last value */
            int failed = name == NULL || PyDict_Contains(source, name) != 0 || PyDict_SetItem(source, name, value) < 0;
            Py_DECREF(value);
            if (failed) goto fail;
        }
        if (at_char(r, ',')) {
            r->at++;
            continue;
        }
        if (take(r, '}') < 0) goto fail;
        return source;
    }
fail:
    Py_DECREF(source);
    return NULL;
}

/* An instance of the tuple subclass `event_class` (a named tuple) holding the three, built without calling it. */
static PyObject *new_event(PyObject *event_class, PyObject *op, PyObject *after, PyObject *source) {
    PyTypeObject *type = (PyTypeObject *)event_class;
    PyObject *event = type->tp_alloc(type, 3);
    if (event == NULL) return NULL;
    PyTuple_SET_ITEM(event, 0, Py_NewRef(op));
    PyTuple_SET_ITEM(event, 1, Py_NewRef(after));
    PyTuple_SET_ITEM(event, 2, Py_NewRef(source));
    return event;
}

/* verify_event(value, event_class) -> event_class(op, after, source) | None: see verify_event.h. */
PyObject *verify_event(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyType_Check(args[1]) || !PyType_IsSubtype((PyTypeObject *)args[1], &PyTuple_Type)) {
        PyErr_SetString(PyExc_TypeError, "verify_event(value, event_class) takes a value and a tuple subclass");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    Reader r = {view.buf, (const unsigned char *)view.buf + view.len};
    static Buffer text, after_text;
    PyObject *op = NULL, *after = NULL, *source = NULL, *result = NULL;
    if (take(&r, '{') < 0 || at_char(&r, '}')) goto done;
    for (;;) {
        text.length = 0;
        int read = read_string(&r, &text);
        if (read == -2) {
            PyErr_NoMemory();
            goto done;
        }
        if (read < 0 || take(&r, ':') < 0) goto done;
#define NAMED(name) (text.length == sizeof name - 1 && memcmp(text.data, name, sizeof name - 1) == 0)
        if (NAMED("op")) {
            if (op != NULL || !at_char(&r, '"')) goto done;
            text.length = 0;
            if ((read = read_string(&r, &text)) == -2) PyErr_NoMemory();
            if (read < 0 || (op = buffer_text(&text)) == NULL) goto done;
        } else if (NAMED("after")) {
            if (after != NULL) goto done;
            if (at_char(&r, 'n')) {
                if (read_literal(&r, "null", 4) < 0) goto done;
                after = Py_NewRef(Py_None);
            } else {
                if (!at_char(&r, '"')) goto done;
                after_text.length = 0;
                if ((read = read_string(&r, &after_text)) == -2) PyErr_NoMemory();
                if (read < 0 || (after = buffer_text(&after_text)) == NULL) goto done;
            }
        } else if (NAMED("source")) {
            if (source != NULL || (source = read_source(&r, &text)) == NULL) goto done;
        } else if (NAMED("schema") || NAMED("payload")) {
            goto done;
        } else if (skip_value(&r, 1) < 0) {
            goto done;
        }
#undef NAMED
        if (at_char(&r, ',')) {
            r.at++;
            continue;
        }
        if (take(&r, '}') < 0) goto done;
        skip_space(&r);
        if (r.at != r.end || op == NULL || source == NULL) goto done;
        /* a delete event's row is gone, whatever its after says (verify_events.read_event) */
        int deleted = PyUnicode_GET_LENGTH(op) == 1 && PyUnicode_READ_CHAR(op, 0) == 'd';
        result = new_event(args[1], op, after != NULL && !deleted ? after : Py_None, source);
        goto done;
    }
done:
    PyBuffer_Release(&view);
    Py_XDECREF(op);
    Py_XDECREF(after);
    Py_XDECREF(source);
    if (text.capacity > ((size_t)1 << 20)) PyMem_RawFree(text.data), text = (Buffer){NULL, 0, 0};
    if (after_text.capacity > ((size_t)1 << 20)) PyMem_RawFree(after_text.data), after_text = (Buffer){NULL, 0, 0};
    if (result == NULL && !PyErr_Occurred()) return Py_NewRef(Py_None);
    return result;
}

/* verify_key(key) -> str | None: see verify_event.h. */
PyObject *verify_key(PyObject *module, PyObject *argument) {
    static const char HEAD[] = "{\"id\":\"";
    Py_buffer view;
    if (PyObject_GetBuffer(argument, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *data = view.buf;
    size_t length = (size_t)view.len, head = sizeof HEAD - 1;
    int canonical = length >= head + 2 && memcmp(data, HEAD, head) == 0 && data[length - 2] == '"' &&
                    data[length - 1] == '}';
    /* the id's text: printable ASCII whose only escapes are \" and \\ (orjson writes those alone), ending at the
       closing quote before the brace */
    for (size_t at = head; canonical && at < length - 2; at++) {
        unsigned char c = data[at];
        if (c < 0x20 || c > 0x7E || c == '"') {
            canonical = 0;
        } else if (c == '\\') {
            if (at + 1 >= length - 2 || (data[at + 1] != '"' && data[at + 1] != '\\')) canonical = 0;
            at++;
        }
    }
    PyObject *result = canonical ? PyUnicode_DecodeASCII((const char *)data, (Py_ssize_t)length, "strict")
                                 : Py_NewRef(Py_None);
    PyBuffer_Release(&view);
    return result;
}
