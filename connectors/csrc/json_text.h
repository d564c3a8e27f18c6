/* JSON text into a growing buffer, shared by the C extensions (scripts/build_extensions.py puts this directory on
   the include path of each). Static functions: each module has its own copy, and only what it uses is kept. */

#ifndef CDC_JSON_TEXT_H
#define CDC_JSON_TEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "plain_bytes.h"

typedef struct {
    char *data;
    Py_ssize_t length;
    Py_ssize_t capacity;
} Buffer;

static inline int reserve(Buffer *out, Py_ssize_t more) {
    if (out->length + more <= out->capacity) return 0;
    Py_ssize_t capacity = out->capacity ? out->capacity : 256;
    while (capacity < out->length + more) capacity *= 2;
    char *grown = PyMem_Realloc(out->data, (size_t)capacity);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    out->data = grown;
    out->capacity = capacity;
    return 0;
}

static inline int put(Buffer *out, const char *text, Py_ssize_t length) {
    if (reserve(out, length) < 0) return -1;
    memcpy(out->data + out->length, text, (size_t)length);
    out->length += length;
    return 0;
}

/* A str's UTF-8 into `out`; -1 with an exception set when it has none (lone surrogates). */
static inline int put_str(Buffer *out, PyObject *text) {
    Py_ssize_t length;
    const char *utf8 = PyUnicode_AsUTF8AndSize(text, &length);
    return utf8 == NULL ? -1 : put(out, utf8, length);
}

static const char HEX[] = "0123456789ABCDEF";

/* json.encoder.encode_basestring with Jackson's upper-case \u00XX (json_converter.string_json). */
static inline int put_json_string(Buffer *out, const char *text, Py_ssize_t length) {
    if (reserve(out, length + 2) < 0) return -1;
    out->data[out->length++] = '"';
    const unsigned char *bytes = (const unsigned char *)text;
    Py_ssize_t i = 0;
    while (i < length) {
        Py_ssize_t end = (Py_ssize_t)json_plain_end(bytes, (size_t)i, (size_t)length);
        if (put(out, text + i, end - i) < 0) return -1;
        if (end >= length) break;
        unsigned char c = bytes[end];
        i = end + 1;
        char escape[6] = {'\\', 0, 0, 0, 0, 0};
        Py_ssize_t size = 2;
        switch (c) {
            case '"': escape[1] = '"'; break;
            case '\\': escape[1] = '\\'; break;
            case '\n': escape[1] = 'n'; break;
            case '\r': escape[1] = 'r'; break;
            case '\t': escape[1] = 't'; break;
            case '\b': escape[1] = 'b'; break;
            case '\f': escape[1] = 'f'; break;
            default:
                escape[1] = 'u';
                escape[2] = '0';
                escape[3] = '0';
                escape[4] = HEX[c >> 4];
                escape[5] = HEX[c & 15];
                size = 6;
        }
        if (put(out, escape, size) < 0) return -1;
    }
    return put(out, "\"", 1);
}

#endif
