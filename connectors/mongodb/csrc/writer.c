/* The JSON text writer: raw BSON documents to the strict Extended JSON text of connectors/mongodb/extjson.py
   `document_json`.

   put_document writes one BSON document, or says UNSUPPORTED when it holds something this code does not write itself (decimal128, code, DBPointer, binary subtype 2, a
   DBRef-shaped sub-document, invalid UTF-8, malformed BSON, very deep nesting): the caller then decodes it and uses
   the Python writer, which stays the reference. set_escape_bits must be called first with a bitmap of the BMP code
   points the Java driver escapes (built from extjson's own rule, so both paths agree).

   Strict mode, compact: `{"name": value,"next": value}`; int64 as {"$numberLong": "n"}, dates as {"$date": millis},
   doubles as Java's Double.toString. */

#include "writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decimal_text.h"
#include "plain_bytes.h"

#define MAX_DEPTH 200

static unsigned char escape_bits[0x10000 / 8];
static int escape_table_set = 0;

int grow_capacity(Buffer *out, size_t more) {
    size_t capacity = out->capacity ? out->capacity : 256;
    while (capacity < out->length + more) capacity *= 2;
    char *data = PyMem_RawRealloc(out->data, capacity);
    if (data == NULL) return -1;
    out->data = data;
    out->capacity = capacity;
    return 0;
}

static const char HEX[] = "0123456789abcdef";

static int put_unit(Buffer *out, unsigned unit) {
    char text[6] = {'\\', 'u', HEX[(unit >> 12) & 15], HEX[(unit >> 8) & 15], HEX[(unit >> 4) & 15], HEX[unit & 15]};
    return put(out, text, 6);
}

int put_escaped_ascii(Buffer *out, unsigned char c) {
    switch (c) {
        case '"': return PUT_LITERAL(out, "\\\"");
        case '\\': return PUT_LITERAL(out, "\\\\");
        case '\b': return PUT_LITERAL(out, "\\b");
        case '\f': return PUT_LITERAL(out, "\\f");
        case '\n': return PUT_LITERAL(out, "\\n");
        case '\r': return PUT_LITERAL(out, "\\r");
        case '\t': return PUT_LITERAL(out, "\\t");
        default: return put_unit(out, c);
    }
}

size_t read_utf8(const unsigned char *text, size_t left, uint32_t *code) {
    unsigned char c = text[0];
    size_t size;
    if (c < 0x80) {
        *code = c;
        return 1;
    }
    if ((c & 0xE0) == 0xC0) {
        size = 2;
        *code = c & 0x1F;
    } else if ((c & 0xF0) == 0xE0) {
        size = 3;
        *code = c & 0x0F;
    } else if ((c & 0xF8) == 0xF0) {
        size = 4;
        *code = c & 0x07;
    } else {
        return 0;
    }
    if (size > left) return 0;
    for (size_t k = 1; k < size; k++) {
        if ((text[k] & 0xC0) != 0x80) return 0;
        *code = (*code << 6) | (text[k] & 0x3F);
    }
    if ((size == 2 && *code < 0x80) || (size == 3 && *code < 0x800) || (size == 4 && *code < 0x10000) ||
        *code > 0x10FFFF || (*code >= 0xD800 && *code <= 0xDFFF))
        return 0;
    return size;
}

Outcome put_string(Buffer *out, const unsigned char *text, size_t length) {
    if (put_char(out, '"') < 0) return NO_MEMORY;
    size_t i = 0;
    while (i < length) {
        size_t run = ascii_plain_end(text, i, length); /* written as they are: printable ASCII but " and \ */
        if (run > i && put(out, (const char *)text + i, run - i) < 0) return NO_MEMORY;
        i = run;
        if (i >= length) break;
        unsigned char c = text[i];
        if (c < 0x80) {
            if (put_escaped_ascii(out, c) < 0) return NO_MEMORY; /* the quote, the backslash, controls and DEL */
            i++;
            continue;
        }
        uint32_t code;
        size_t size = read_utf8(text + i, length - i, &code);
        if (size == 0) return UNSUPPORTED;
        int failed;
        if (code >= 0x10000) {
            uint32_t rest = code - 0x10000;
            failed = put_unit(out, 0xD800 + (rest >> 10)) < 0 || put_unit(out, 0xDC00 + (rest & 0x3FF)) < 0;
        } else if (escape_bits[code >> 3] & (1 << (code & 7))) {
            failed = put_unit(out, code) < 0;
        } else {
            failed = put(out, (const char *)text + i, size) < 0;
        }
        if (failed) return NO_MEMORY;
        i += size;
    }
    return put_char(out, '"') < 0 ? NO_MEMORY : WRITTEN;
}

/* The shortest decimal digits that read back as `value` (> 0, finite), those of Python's repr: `digits` without
   trailing zeros, the value being d1.d2d3... x 10^exponent. -1 when out of memory. */
static int shortest_digits(double value, char *digits, int *exponent) {
    char *text = PyOS_double_to_string(value, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (text == NULL) return -1;
    int n = 0, point = -1, leading_zeros = 0, seen_nonzero = 0, integer_digits = 0;
    char *p = text;
    for (; *p && *p != 'e'; p++) {
        if (*p == '.') {
            point = n;
            continue;
        }
        if (*p < '0' || *p > '9') continue;
        if (point < 0) integer_digits++;
        if (!seen_nonzero && *p == '0') {
            leading_zeros++;
            continue;
        }
        seen_nonzero = 1;
        digits[n++] = *p;
    }
    if (*p == 'e') {
        *exponent = atoi(p + 1); /* d.ddd form: one integer digit, never zero */
    } else if (integer_digits > leading_zeros) {
        *exponent = integer_digits - 1; /* ddd.ddd */
    } else {
        *exponent = -(leading_zeros - integer_digits) - 1; /* 0.000ddd */
    }
    PyMem_Free(text);
    while (n > 1 && digits[n - 1] == '0') n--;
    digits[n] = '\0';
    return 0;
}

/* Java's Double.toString of a finite value (extjson.java_double). */
static int put_double(Buffer *out, double value) {
    char text[64];
    if (value == 0) {
        return signbit(value) ? PUT_LITERAL(out, "-0.0") : PUT_LITERAL(out, "0.0");
    }
    double magnitude = fabs(value);
    char digits[32];
    int exponent;
    if (shortest_digits(magnitude, digits, &exponent) < 0) return -1;
    int length = (int)strlen(digits);
    char *p = text;
    if (value < 0) *p++ = '-';
    if (magnitude >= 1e-3 && magnitude < 1e7) {
        if (exponent >= 0) {
            for (int k = 0; k <= exponent; k++) *p++ = k < length ? digits[k] : '0';
            *p++ = '.';
            if (length > exponent + 1) {
                for (int k = exponent + 1; k < length; k++) *p++ = digits[k];
            } else {
                *p++ = '0';
            }
        } else {
            *p++ = '0';
            *p++ = '.';
            for (int k = 0; k < -exponent - 1; k++) *p++ = '0';
            for (int k = 0; k < length; k++) *p++ = digits[k];
        }
        return put(out, text, p - text);
    }
    if (length == 1) {
        /* Where one digit would do, Java picks the two-digit decimal closest to the value (5e-324 -> 4.9E-324). */
        char two[32];
        snprintf(two, sizeof two, "%.1e", magnitude);
        digits[0] = two[0];
        digits[1] = two[2];
        digits[2] = '\0';
        length = digits[1] == '0' ? 1 : 2;
        exponent = atoi(strchr(two, 'e') + 1);
    }
    *p++ = digits[0];
    *p++ = '.';
    if (length > 1) {
        for (int k = 1; k < length; k++) *p++ = digits[k];
    } else {
        *p++ = '0';
    }
    p += snprintf(p, text + sizeof text - p, "E%d", exponent);
    return put(out, text, p - text);
}

int put_int64(Buffer *out, long long value) {
    if (grow(out, CDC_INT64_TEXT_MAX) < 0) return -1;
    out->length += decimal_int64(out->data + out->length, value);
    return 0;
}

static const char BASE64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static int put_base64(Buffer *out, const unsigned char *data, size_t length) {
    if (grow(out, (length + 2) / 3 * 4) < 0) return -1;
    char *p = out->data + out->length;
    size_t i = 0;
    for (; i + 3 <= length; i += 3) {
        uint32_t bits = (data[i] << 16) | (data[i + 1] << 8) | data[i + 2];
        *p++ = BASE64[bits >> 18];
        *p++ = BASE64[(bits >> 12) & 63];
        *p++ = BASE64[(bits >> 6) & 63];
        *p++ = BASE64[bits & 63];
    }
    if (length - i == 1) {
        uint32_t bits = data[i] << 16;
        *p++ = BASE64[bits >> 18];
        *p++ = BASE64[(bits >> 12) & 63];
        *p++ = '=';
        *p++ = '=';
    } else if (length - i == 2) {
        uint32_t bits = (data[i] << 16) | (data[i + 1] << 8);
        *p++ = BASE64[bits >> 18];
        *p++ = BASE64[(bits >> 12) & 63];
        *p++ = BASE64[(bits >> 6) & 63];
        *p++ = '=';
    }
    out->length = p - out->data;
    return 0;
}

int32_t read_int32(const unsigned char *p) {
    return (int32_t)((uint32_t)p[0] | ((uint32_t)p[1] << 8) | ((uint32_t)p[2] << 16) | ((uint32_t)p[3] << 24));
}

int64_t read_int64(const unsigned char *p) {
    uint64_t low = (uint32_t)read_int32(p), high = (uint32_t)read_int32(p + 4);
    return (int64_t)(low | (high << 32));
}

/* How a document is written: strict mode with bare NaN and ±Infinity (STYLE_BARE) or with them as
   {"$numberDouble": …}; or relaxed mode (STYLE_RELAXED, extjson.updated_fields_json: ", " between members, int64 as
   plain numbers), where only the types below that it writes alike are written and the rest is left to Python. */
#define STYLE_BARE 1
#define STYLE_RELAXED 2

static Outcome put_container(Buffer *out, const unsigned char *data, size_t length, int is_array, int style,
                             int depth);

/* Whether relaxed mode writes a value of BSON `type` as this writer does (strict mode's text, int64 apart). */
static int relaxed_writes(unsigned char type) {
    switch (type) {
        case 0x01: case 0x02: case 0x03: case 0x04: case 0x07: case 0x08: case 0x0A: case 0x10: case 0x12: return 1;
        default: return 0;
    }
}

/* One element's value starting at data[*at] (of BSON type `type`), moving *at past it. */
static Outcome put_value(Buffer *out, unsigned char type, const unsigned char *data, size_t length, size_t *at,
                         int style, int depth) {
    size_t i = *at;
    size_t left = length - i;
    int bare = style & STYLE_BARE;
    if ((style & STYLE_RELAXED) && !relaxed_writes(type)) return UNSUPPORTED;
    switch (type) {
        case 0x01: { /* double */
            if (left < 8) return UNSUPPORTED;
            int64_t bits = read_int64(data + i);
            double value;
            memcpy(&value, &bits, 8);
            *at = i + 8;
            if (isfinite(value)) return put_double(out, value) < 0 ? NO_MEMORY : WRITTEN;
            if (style & STYLE_RELAXED) return UNSUPPORTED;
            const char *name = isnan(value) ? "NaN" : (value > 0 ? "Infinity" : "-Infinity");
            int failed = bare ? put(out, name, strlen(name)) < 0
                              : PUT_LITERAL(out, "{\"$numberDouble\": \"") < 0 || put(out, name, strlen(name)) < 0 ||
                                    PUT_LITERAL(out, "\"}") < 0;
            return failed ? NO_MEMORY : WRITTEN;
        }
        case 0x02:   /* string */
        case 0x0E: { /* symbol (decoded as a str) */
            if (left < 5) return UNSUPPORTED;
            int32_t size = read_int32(data + i);
            if (size < 1 || (size_t)size > left - 4 || data[i + 4 + size - 1] != 0) return UNSUPPORTED;
            *at = i + 4 + size;
            if ((style & STYLE_RELAXED) && size > 1 && data[i + 4] == ':') return UNSUPPORTED; /* extjson's fallback */
            return put_string(out, data + i + 4, size - 1);
        }
        case 0x03:   /* document */
        case 0x04: { /* array */
            if (left < 5) return UNSUPPORTED;
            int32_t size = read_int32(data + i);
            if (size < 5 || (size_t)size > left || data[i + size - 1] != 0) return UNSUPPORTED;
            *at = i + size;
            if (depth >= MAX_DEPTH) return UNSUPPORTED;
            return put_container(out, data + i, size, type == 0x04, style, depth + 1);
        }
        case 0x05: { /* binary */
            if (left < 5) return UNSUPPORTED;
            int32_t size = read_int32(data + i);
            if (size < 0 || (size_t)size > left - 5) return UNSUPPORTED;
            unsigned char subtype = data[i + 4];
            if (subtype == 2) return UNSUPPORTED; /* the old binary subtype: pymongo drops its inner length */
            *at = i + 5 + size;
            char tail[32];
            snprintf(tail, sizeof tail, "\",\"$type\": \"%02X\"}", subtype);
            int failed = PUT_LITERAL(out, "{\"$binary\": \"") < 0 || put_base64(out, data + i + 5, size) < 0 ||
                         put(out, tail, strlen(tail)) < 0;
            return failed ? NO_MEMORY : WRITTEN;
        }
        case 0x06: /* undefined (decoded as None) */
        case 0x0A: /* null */
            return PUT_LITERAL(out, "null") < 0 ? NO_MEMORY : WRITTEN;
        case 0x07: { /* ObjectId */
            if (left < 12) return UNSUPPORTED;
            char text[40] = "{\"$oid\": \"";
            char *p = text + strlen(text);
            for (int k = 0; k < 12; k++) {
                *p++ = HEX[data[i + k] >> 4];
                *p++ = HEX[data[i + k] & 15];
            }
            *p++ = '"';
            *p++ = '}';
            *at = i + 12;
            return put(out, text, p - text) < 0 ? NO_MEMORY : WRITTEN;
        }
        case 0x08: /* boolean */
            if (left < 1 || data[i] > 1) return UNSUPPORTED;
            *at = i + 1;
            return (data[i] ? PUT_LITERAL(out, "true") : PUT_LITERAL(out, "false")) < 0 ? NO_MEMORY : WRITTEN;
        case 0x09: /* UTC datetime */
            if (left < 8) return UNSUPPORTED;
            *at = i + 8;
            return PUT_LITERAL(out, "{\"$date\": ") < 0 || put_int64(out, read_int64(data + i)) < 0 ||
                           put_char(out, '}') < 0
                       ? NO_MEMORY
                       : WRITTEN;
        case 0x0B: { /* regular expression: pymongo keeps the flags it knows, written back in this order */
            const unsigned char *pattern = data + i;
            const unsigned char *pattern_end = memchr(pattern, 0, left);
            if (pattern_end == NULL) return UNSUPPORTED;
            const unsigned char *flags = pattern_end + 1;
            const unsigned char *flags_end = memchr(flags, 0, data + length - flags);
            if (flags_end == NULL) return UNSUPPORTED;
            *at = (flags_end + 1) - data;
            char options[8];
            int n = 0;
            for (const char *known = "ilmsux"; *known; known++)
                if (memchr(flags, *known, flags_end - flags) != NULL) options[n++] = *known;
            Outcome outcome;
            if (PUT_LITERAL(out, "{\"$regex\": ") < 0) return NO_MEMORY;
            if ((outcome = put_string(out, pattern, pattern_end - pattern)) != WRITTEN) return outcome;
            if (PUT_LITERAL(out, ",\"$options\": \"") < 0 || put(out, options, n) < 0 || PUT_LITERAL(out, "\"}") < 0)
                return NO_MEMORY;
            return WRITTEN;
        }
        case 0x10: /* int32 */
            if (left < 4) return UNSUPPORTED;
            *at = i + 4;
            return put_int64(out, read_int32(data + i)) < 0 ? NO_MEMORY : WRITTEN;
        case 0x11: { /* timestamp: increment, then time */
            if (left < 8) return UNSUPPORTED;
            *at = i + 8;
            return PUT_LITERAL(out, "{\"$timestamp\": {\"t\": ") < 0 ||
                           put_int64(out, (uint32_t)read_int32(data + i + 4)) < 0 ||
                           PUT_LITERAL(out, ",\"i\": ") < 0 || put_int64(out, (uint32_t)read_int32(data + i)) < 0 ||
                           PUT_LITERAL(out, "}}") < 0
                       ? NO_MEMORY
                       : WRITTEN;
        }
        case 0x12: /* int64 */
            if (left < 8) return UNSUPPORTED;
            *at = i + 8;
            if (style & STYLE_RELAXED) return put_int64(out, read_int64(data + i)) < 0 ? NO_MEMORY : WRITTEN;
            return PUT_LITERAL(out, "{\"$numberLong\": \"") < 0 || put_int64(out, read_int64(data + i)) < 0 ||
                           PUT_LITERAL(out, "\"}") < 0
                       ? NO_MEMORY
                       : WRITTEN;
        case 0xFF:
            return PUT_LITERAL(out, "{\"$minKey\": 1}") < 0 ? NO_MEMORY : WRITTEN;
        case 0x7F:
            return PUT_LITERAL(out, "{\"$maxKey\": 1}") < 0 ? NO_MEMORY : WRITTEN;
        default: /* decimal128, code, code with scope, DBPointer, anything unknown */
            return UNSUPPORTED;
    }
}

typedef struct {
    const unsigned char *text;
    size_t length;
} Name;

static int compare_names(const void *left, const void *right) {
    const Name *a = left, *b = right;
    if (a->length != b->length) return a->length < b->length ? -1 : 1;
    return memcmp(a->text, b->text, a->length);
}

/* Whether a document repeats a name (pymongo keeps the last value at the first one's place). */
static int has_duplicates(Name *names, size_t count) {
    if (count <= 16) {
        for (size_t a = 1; a < count; a++)
            for (size_t b = 0; b < a; b++)
                if (compare_names(names + a, names + b) == 0) return 1;
        return 0;
    }
    qsort(names, count, sizeof(Name), compare_names);
    for (size_t a = 1; a < count; a++)
        if (compare_names(names + a, names + a - 1) == 0) return 1;
    return 0;
}

/* A document or array: data[0..length) is the whole BSON container (its int32 size through its final 0). */
static Outcome put_container(Buffer *out, const unsigned char *data, size_t length, int is_array, int style,
                             int depth) {
    if (put_char(out, is_array ? '[' : '{') < 0) return NO_MEMORY;
    Name local[32];
    Name *names = local;
    size_t count = 0, capacity = 32;
    Outcome outcome = WRITTEN;
    size_t at = 4;
    while (at < length - 1) {
        unsigned char type = data[at++];
        const unsigned char *name = data + at;
        const unsigned char *name_end = memchr(name, 0, length - at);
        if (name_end == NULL) {
            outcome = UNSUPPORTED;
            break;
        }
        size_t name_length = name_end - name;
        /* pymongo decodes a document with $ref and $id as a DBRef: left to the Python path. */
        if (!is_array && name_length == 4 && memcmp(name, "$ref", 4) == 0) {
            outcome = UNSUPPORTED;
            break;
        }
        at += name_length + 1;
        if (at >= length) {
            outcome = UNSUPPORTED;
            break;
        }
        if (count && ((style & STYLE_RELAXED) ? PUT_LITERAL(out, ", ") : put_char(out, ',')) < 0) {
            outcome = NO_MEMORY;
            break;
        }
        if (!is_array) {
            if (count == capacity) {
                Name *grown = PyMem_RawMalloc(2 * capacity * sizeof(Name));
                if (grown == NULL) {
                    outcome = NO_MEMORY;
                    break;
                }
                memcpy(grown, names, count * sizeof(Name));
                if (names != local) PyMem_RawFree(names);
                names = grown;
                capacity *= 2;
            }
            if ((style & STYLE_RELAXED) && name_length && name[0] == ':') { /* extjson's fallback */
                outcome = UNSUPPORTED;
                break;
            }
            names[count].text = name;
            names[count].length = name_length;
            if ((outcome = put_string(out, name, name_length)) != WRITTEN) break;
            if (PUT_LITERAL(out, ": ") < 0) {
                outcome = NO_MEMORY;
                break;
            }
        }
        count++;
        if ((outcome = put_value(out, type, data, length - 1, &at, style, depth)) != WRITTEN) break;
    }
    if (outcome == WRITTEN && at != length - 1) outcome = UNSUPPORTED;
    if (outcome == WRITTEN && !is_array && has_duplicates(names, count)) outcome = UNSUPPORTED;
    if (names != local) PyMem_RawFree(names);
    if (outcome != WRITTEN) return outcome;
    return put_char(out, is_array ? ']' : '}') < 0 ? NO_MEMORY : WRITTEN;
}


int is_document(const unsigned char *data, size_t length) {
    return length >= 5 && (size_t)read_int32(data) == length && data[length - 1] == 0;
}

Outcome put_document(Buffer *out, const unsigned char *data, size_t length, int bare) {
    if (!is_document(data, length)) return UNSUPPORTED;
    return put_container(out, data, length, 0, bare ? STYLE_BARE : 0, 0);
}

Outcome put_relaxed_document(Buffer *out, const unsigned char *data, size_t length) {
    if (!is_document(data, length)) return UNSUPPORTED;
    return put_container(out, data, length, 0, STYLE_RELAXED, 0);
}

int set_escape_bits(const unsigned char *bits, size_t length) {
    if (length != sizeof escape_bits) return -1;
    memcpy(escape_bits, bits, sizeof escape_bits);
    escape_table_set = 1;
    return 0;
}

int writer_ready(void) { return escape_table_set; }

size_t value_size(unsigned char type, const unsigned char *value, size_t left) {
    size_t size;
    switch (type) {
        case 0x01: case 0x09: case 0x11: case 0x12: size = 8; break;
        case 0x10: size = 4; break;
        case 0x07: size = 12; break;
        case 0x08: size = 1; break;
        case 0x13: size = 16; break;
        case 0x06: case 0x0A: case 0x7F: case 0xFF: size = 0; break;
        case 0x02: case 0x0D: case 0x0E:
            size = left >= 4 ? 4 + (size_t)(uint32_t)read_int32(value) : (size_t)-1;
            break;
        case 0x03: case 0x04: case 0x0F:
            size = left >= 4 ? (size_t)(uint32_t)read_int32(value) : (size_t)-1;
            break;
        case 0x05:
            size = left >= 4 ? 5 + (size_t)(uint32_t)read_int32(value) : (size_t)-1;
            break;
        case 0x0C:
            size = left >= 4 ? 4 + (size_t)(uint32_t)read_int32(value) + 12 : (size_t)-1;
            break;
        case 0x0B: {
            const unsigned char *first = memchr(value, 0, left);
            const unsigned char *second = first ? memchr(first + 1, 0, value + left - (first + 1)) : NULL;
            size = second ? (size_t)(second + 1 - value) : (size_t)-1;
            break;
        }
        default: size = (size_t)-1;
    }
    return size != (size_t)-1 && size <= left ? size : (size_t)-1;
}
