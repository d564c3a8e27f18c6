/* JSON text into a growing buffer, shared by the C extensions (scripts/build_extensions.py puts this directory on
   the include path of each). Static functions: each module has its own copy, and only what it uses is kept. */

#ifndef CDC_JSON_TEXT_H
#define CDC_JSON_TEXT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>

#include "decimal_text.h"
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

/* A JSON number of `value`, as str(int) writes it. */
static inline int put_int64(Buffer *out, long long value) {
    char text[CDC_INT64_TEXT_MAX];
    return put(out, text, decimal_int64(text, value));
}

static const char HEX[] = "0123456789ABCDEF";

/* As json_plain_end, but also stopping at the first byte of a 4-byte UTF-8 sequence (a character beyond the Basic
   Multilingual Plane, which Jackson's UTF-8 writer escapes as two UTF-16 units). */
static inline size_t connect_plain_end(const unsigned char *text, size_t i, size_t length) {
    while (i + 8 <= length) {
        uint64_t word = load_word(text + i);
        if (any_control(word) | any_byte_is(word, '"') | any_byte_is(word, '\\') |
            any_byte_is(word & 0xF0F0F0F0F0F0F0F0ULL, 0xF0))
            break;
        i += 8;
    }
    while (i < length && text[i] >= 0x20 && text[i] != '"' && text[i] != '\\' && text[i] < 0xF0) i++;
    return i;
}

static inline int put_unit_escape(Buffer *out, unsigned int unit) {
    char escape[6] = {'\\', 'u', HEX[(unit >> 12) & 15], HEX[(unit >> 8) & 15], HEX[(unit >> 4) & 15], HEX[unit & 15]};
    return put(out, escape, 6);
}

/* json.encoder.encode_basestring with Jackson's upper-case \u00XX and its escaped surrogate pairs
   (json_converter.string_json). */
static inline int put_json_string(Buffer *out, const char *text, Py_ssize_t length) {
    if (reserve(out, length + 2) < 0) return -1;
    out->data[out->length++] = '"';
    const unsigned char *bytes = (const unsigned char *)text;
    Py_ssize_t i = 0;
    while (i < length) {
        Py_ssize_t end = (Py_ssize_t)connect_plain_end(bytes, (size_t)i, (size_t)length);
        if (put(out, text + i, end - i) < 0) return -1;
        if (end >= length) break;
        unsigned char c = bytes[end];
        i = end + 1;
        if (c >= 0xF0 && end + 3 < length) {  /* valid UTF-8 (from a str): a lead byte and three continuations */
            unsigned int code = ((c & 7u) << 18) | ((bytes[end + 1] & 63u) << 12) | ((bytes[end + 2] & 63u) << 6) |
                                (bytes[end + 3] & 63u);
            code -= 0x10000;
            if (put_unit_escape(out, 0xD800 + (code >> 10)) < 0 || put_unit_escape(out, 0xDC00 + (code & 0x3FF)) < 0)
                return -1;
            i = end + 4;
            continue;
        }
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
