/* A Decimal field's JSON as JsonConverter writes it (decimal.handling.mode=precise): the base64 of
   BigInteger.toByteArray() of the unscaled value, from the decimal text of MariaDB's DECIMAL and PostgreSQL's
   numeric(p, s) columns. */

#ifndef CDC_UNSCALED_DECIMAL_H
#define CDC_UNSCALED_DECIMAL_H

#include <stdint.h>

#include "json_text.h"

/* The most digits put_decimal_text takes: MariaDB's DECIMAL has 65 at most; a PostgreSQL numeric of more is left
   to the column's Python writer. */
#define CDC_DECIMAL_DIGITS_MAX 96

/* BigInteger.toByteArray() (minimal big-endian two's complement) of `value` at `bytes` (room for 8); their count. */
static inline int int64_bytes(int64_t value, unsigned char *bytes) {
    int length = 1;
    while (length < 8) { /* the fewest bytes whose sign bit is the value's */
        int64_t limit = (int64_t)1 << (8 * length - 1);
        if (value >= -limit && value < limit) break;
        length++;
    }
    for (int i = 0; i < length; i++) bytes[length - 1 - i] = (unsigned char)((uint64_t)value >> (8 * i));
    return length;
}

/* BigInteger.toByteArray() of the decimal `digits` (up to CDC_DECIMAL_DIGITS_MAX), minus it when `negative`, in
   base 2^32 limbs, at `bytes` (room for 49); their count. */
static inline int decimal_digits_bytes(int negative, const char *digits, int count, unsigned char *bytes) {
    static const uint32_t powers[] = {1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000, 1000000000};
    uint32_t limbs[12] = {0}; /* little-endian base 2^32: 384 bits hold 10^96 */
    int used = 1;
    for (int i = 0; i < count;) {
        int take = count - i < 9 ? count - i : 9;
        uint32_t chunk = 0;
        for (int j = 0; j < take; j++) chunk = chunk * 10 + (uint32_t)(digits[i + j] - '0');
        i += take;
        uint64_t carry = chunk;
        for (int j = 0; j < used; j++) {
            uint64_t product = (uint64_t)limbs[j] * powers[take] + carry;
            limbs[j] = (uint32_t)product;
            carry = product >> 32;
        }
        if (carry) limbs[used++] = (uint32_t)carry;
    }
    int zero = 1;
    for (int j = 0; j < used; j++) zero &= limbs[j] == 0;
    if (zero) negative = 0;
    if (negative) { /* two's complement of -m is the bytes of m - 1, inverted */
        for (int j = 0; j < used; j++) {
            if (limbs[j]--) break;
        }
    }
    int bits = 0;
    for (int j = used - 1; j >= 0; j--) {
        if (limbs[j]) {
            bits = 32 * j + 32 - __builtin_clz(limbs[j]);
            break;
        }
    }
    int length = bits / 8 + 1;
    for (int i = 0; i < length; i++) {
        int from_end = length - 1 - i;
        unsigned char byte = (unsigned char)(limbs[from_end / 4] >> (8 * (from_end % 4)));
        bytes[i] = negative ? (unsigned char)~byte : byte;
    }
    return length;
}

/* `bytes` as a JSON string of their base64 (JsonConverter's BYTES), written in place. */
static inline int put_base64_string(Buffer *out, const unsigned char *bytes, int length) {
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    if (reserve(out, 4 * ((length + 2) / 3) + 2) < 0) return -1;
    char *text = out->data + out->length;
    int at = 0;
    text[at++] = '"';
    for (int i = 0; i < length; i += 3) {
        uint32_t group = (uint32_t)bytes[i] << 16;
        if (i + 1 < length) group |= (uint32_t)bytes[i + 1] << 8;
        if (i + 2 < length) group |= bytes[i + 2];
        text[at++] = alphabet[(group >> 18) & 63];
        text[at++] = alphabet[(group >> 12) & 63];
        text[at++] = i + 1 < length ? alphabet[(group >> 6) & 63] : '=';
        text[at++] = i + 2 < length ? alphabet[group & 63] : '=';
    }
    text[at++] = '"';
    out->length += at;
    return 0;
}

/* A decimal's text ("-"? digits ("." digits)?, as str(Decimal), the binlog decoder or PostgreSQL's numeric output
   writes it) as a Decimal field of scale `scale` (MariaDB's json_converter.unscaled_bytes, PostgreSQL's
   types._fixed_scale_json): 1 when the text is not of that form, has another count of fraction digits or more than
   CDC_DECIMAL_DIGITS_MAX digits (the Python writer says what it makes of it), else 0 written or -1 (no memory). */
static inline int put_decimal_text(Buffer *out, const char *text, Py_ssize_t length, long scale) {
    int negative = length > 0 && text[0] == '-';
    Py_ssize_t start = negative, i = start;
    while (i < length && text[i] >= '0' && text[i] <= '9') i++;
    Py_ssize_t point = i, fraction = 0; /* point: where the '.' is, or length */
    if (i < length && text[i] == '.') {
        for (i++; i < length && text[i] >= '0' && text[i] <= '9'; i++) fraction++;
    }
    Py_ssize_t total = (point - start) + fraction;
    if (i != length || total == 0 || fraction != scale) return 1;
    /* BigInteger.toByteArray() of the unscaled value (json_converter.big_integer_bytes): from an int64 for up to 18
       digits (most columns), else from the significant digits */
    unsigned char bytes[49];
    int size;
    if (total <= 18) {
        int64_t value = 0;
        for (Py_ssize_t k = start; k < point; k++) value = value * 10 + (text[k] - '0');
        for (Py_ssize_t k = point + 1; k < length; k++) value = value * 10 + (text[k] - '0');
        size = int64_bytes(negative ? -value : value, bytes);
    } else {
        char digits[CDC_DECIMAL_DIGITS_MAX];
        int count = 0;
        for (Py_ssize_t k = start; k < length; k++) {
            if (text[k] == '.' || (count == 0 && text[k] == '0')) continue; /* leading zeros are none */
            if (count == CDC_DECIMAL_DIGITS_MAX) return 1;
            digits[count++] = text[k];
        }
        size = decimal_digits_bytes(negative, digits, count, bytes);
    }
    return put_base64_string(out, bytes, size);
}

#endif
