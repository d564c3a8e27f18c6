/* The JSON text writer shared by the compiled module's functions (writer.c), and BSON reading helpers. */

#ifndef CDC_RAWJSON_WRITER_H
#define CDC_RAWJSON_WRITER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

typedef struct {
    char *data;
    size_t length;
    size_t capacity;
} Buffer;

/* Why a document cannot be written here (the caller falls back to Python). */
typedef enum { WRITTEN = 0, UNSUPPORTED = 1, NO_MEMORY = 2 } Outcome;

/* The buffer's room grown to hold `more` bytes past its length (grow's slow path); -1 when out of memory. */
int grow_capacity(Buffer *out, size_t more);

/* Inline: an event's value is written in dozens of short pieces, and a call for each cost more than its copy. */
static inline int grow(Buffer *out, size_t more) {
    return out->length + more <= out->capacity ? 0 : grow_capacity(out, more);
}

static inline int put(Buffer *out, const char *text, size_t length) {
    if (grow(out, length) < 0) return -1;
    memcpy(out->data + out->length, text, length);
    out->length += length;
    return 0;
}

static inline int put_char(Buffer *out, char c) {
    if (grow(out, 1) < 0) return -1;
    out->data[out->length++] = c;
    return 0;
}

int put_int64(Buffer *out, long long value);
#define PUT_LITERAL(out, text) put((out), (text), sizeof(text) - 1)

int32_t read_int32(const unsigned char *p);
int64_t read_int64(const unsigned char *p);
/* The size of a value of BSON type `type` at `value` (at most `left` bytes there); (size_t)-1 when malformed. */
size_t value_size(unsigned char type, const unsigned char *value, size_t left);
/* Whether data[0..length) is framed as one BSON document (its int32 size and its final 0). */
int is_document(const unsigned char *data, size_t length);

/* One ASCII character escaped as JSON: \" \\ \b \f \n \r \t, or \u00XX. */
int put_escaped_ascii(Buffer *out, unsigned char c);
/* The code point of the UTF-8 sequence at text[0..left): its length, 0 when it is not valid UTF-8. */
size_t read_utf8(const unsigned char *text, size_t left, uint32_t *code);
/* A quoted string escaped as the Java driver escapes it; UNSUPPORTED for invalid UTF-8. */
Outcome put_string(Buffer *out, const unsigned char *text, size_t length);
/* The strict Extended JSON of one whole BSON document (extjson.document_json). */
Outcome put_document(Buffer *out, const unsigned char *data, size_t length, int bare);
/* The relaxed Extended JSON of a document as extjson.updated_fields_json writes it; UNSUPPORTED for the types whose
   relaxed text differs from strict mode's (dates, binaries, …), non-finite doubles and colon-first strings. */
Outcome put_relaxed_document(Buffer *out, const unsigned char *data, size_t length);

/* The BMP code points the Java driver escapes, one bit each; writer_ready() is 0 until they are set. */
int set_escape_bits(const unsigned char *bits, size_t length);
int writer_ready(void);

#endif
