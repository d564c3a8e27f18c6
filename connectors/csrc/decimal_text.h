/* Integers as decimal text, written as snprintf's "%lld" and "%u" write them at a fraction of their cost: an event's
   value holds several (its timestamps, its ord, its document's numbers), and snprintf's format parsing cost more
   than the rest of a small event's writing. */

#ifndef CDC_DECIMAL_TEXT_H
#define CDC_DECIMAL_TEXT_H

#include <stdint.h>
#include <string.h>

/* The longest text decimal_int64 writes: "-9223372036854775808". */
#define CDC_INT64_TEXT_MAX 20

static const char CDC_DIGIT_PAIRS[201] =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
    "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
    "8081828384858687888990919293949596979899";

/* The digits of `value` at `out` (room for 20), without a sign; their count. Two digits per division. */
static inline int decimal_digits(char *out, unsigned long long value) {
    char text[20];
    int at = 20;
    while (value >= 100) {
        unsigned pair = (unsigned)(value % 100) * 2;
        value /= 100;
        text[--at] = CDC_DIGIT_PAIRS[pair + 1];
        text[--at] = CDC_DIGIT_PAIRS[pair];
    }
    if (value >= 10) {
        text[--at] = CDC_DIGIT_PAIRS[value * 2 + 1];
        text[--at] = CDC_DIGIT_PAIRS[value * 2];
    } else {
        text[--at] = (char)('0' + value);
    }
    memcpy(out, text + at, (size_t)(20 - at));
    return 20 - at;
}

/* "%lld" of `value` at `out` (room for CDC_INT64_TEXT_MAX); its length. */
static inline int decimal_int64(char *out, long long value) {
    if (value >= 0) return decimal_digits(out, (unsigned long long)value);
    out[0] = '-';
    return 1 + decimal_digits(out + 1, 0ULL - (unsigned long long)value);
}

#endif
