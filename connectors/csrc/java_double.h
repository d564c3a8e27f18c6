/* Java's Double.toString (JDK 19+), the text Jackson writes for a float64, as json_converter.java_double writes it:
   the shortest digits that read back as the value (Python's repr), the closest two-digit decimal where one digit
   would do, plain notation for decimal exponents -3 to 6, d.dddEn otherwise.

   A decimal text that already holds those digits (PostgreSQL 12 and later write a float8 with its shortest digits)
   is written from them: java_double_of_text checks exactly, with 128-bit integers, that no shorter decimal reads
   back as the value and that no other decimal of as many digits is nearer to it (repr's digits are the shortest that
   read back, the nearest of those), else goes through repr (David Gay's dtoa, several times slower). */

#ifndef CDC_JAVA_DOUBLE_H
#define CDC_JAVA_DOUBLE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "decimal_text.h"

/* Room for any text java_double_text or java_format of up to 17 digits writes (the longest: "-" + 17 digits + "." +
   "E-324", 24). */
#define CDC_JAVA_DOUBLE_TEXT_MAX 32

/* The most significant digits java_digits takes (repr writes 17 at most). */
#define CDC_JAVA_DIGITS_MAX 20

/* json_converter._java_digits of a positive number's text (digits, optional point, optional e±n): its significant
   digits without trailing zeros into `digits` (room for CDC_JAVA_DIGITS_MAX), their count; `*exponent` the decimal
   exponent of the first. 0 when the text has more or none but zeros. */
static inline int java_digits(const char *text, char *digits, int *exponent) {
    int count = 0, seen = 0, integer_digits = 0, first = -1, point = 0;
    const char *p = text;
    for (; *p && *p != 'e' && *p != 'E'; p++) {
        if (*p == '.') {
            point = 1;
            continue;
        }
        if (*p < '0' || *p > '9') return 0;
        if (!point) integer_digits++;
        if (first < 0 && *p == '0') {
            seen++;
            continue;
        }
        if (first < 0) first = seen;
        if (count == CDC_JAVA_DIGITS_MAX) return 0;
        digits[count++] = *p;
        seen++;
    }
    if (first < 0) return 0;
    int power = (*p == 'e' || *p == 'E') ? atoi(p + 1) : 0;
    *exponent = integer_digits - 1 - first + power;
    while (count > 1 && digits[count - 1] == '0') count--;
    return count;
}

/* json_converter._java_format of `count` digits (no trailing zero but a lone one) whose first has decimal exponent
   `exponent`, at `out`: its length. */
static inline int java_format(char *out, int negative, const char *digits, int count, int exponent) {
    int n = 0;
    if (negative) out[n++] = '-';
    if (exponent >= -3 && exponent < 7) {
        if (exponent >= 0) {
            for (int k = 0; k <= exponent; k++) out[n++] = k < count ? digits[k] : '0';
            out[n++] = '.';
            if (count > exponent + 1) {
                memcpy(out + n, digits + exponent + 1, (size_t)(count - exponent - 1));
                n += count - exponent - 1;
            } else {
                out[n++] = '0';
            }
        } else {
            out[n++] = '0';
            out[n++] = '.';
            for (int k = 0; k < -exponent - 1; k++) out[n++] = '0';
            memcpy(out + n, digits, (size_t)count);
            n += count;
        }
        return n;
    }
    out[n++] = digits[0];
    out[n++] = '.';
    if (count > 1) {
        memcpy(out + n, digits + 1, (size_t)(count - 1));
        n += count - 1;
    } else {
        out[n++] = '0';
    }
    out[n++] = 'E';
    return n + decimal_int64(out + n, exponent);
}

/* java_digits of PyOS_double_to_string(magnitude, code, precision) (a positive, finite magnitude); -1 with an
   exception set. */
static inline int formatted_digits(double magnitude, char code, int precision, char *digits, int *exponent) {
    char *text = PyOS_double_to_string(magnitude, code, precision, 0, NULL);
    if (text == NULL) return -1;
    int count = java_digits(text, digits, exponent);
    PyMem_Free(text);
    if (count == 0) PyErr_SetString(PyExc_SystemError, "formatted_digits: a float's text without digits");
    return count == 0 ? -1 : count;
}

/* Double.toString of a finite `value` at `out` (room for CDC_JAVA_DOUBLE_TEXT_MAX); its length, or -1 with an
   exception set (no memory). */
static inline int java_double_text(char *out, double value) {
    if (value == 0) {
        memcpy(out, signbit(value) ? "-0.0" : "0.0", signbit(value) ? 4 : 3);
        return signbit(value) ? 4 : 3;
    }
    double magnitude = fabs(value);
    char digits[CDC_JAVA_DIGITS_MAX];
    int exponent = 0;
    int count = formatted_digits(magnitude, 'r', 0, digits, &exponent);
    /* JDK 19+: the closest two-digit decimal where the shortest has one digit (5e-324 is 4.9E-324) */
    if (count == 1) count = formatted_digits(magnitude, 'e', 1, digits, &exponent);
    return count < 0 ? -1 : java_format(out, value < 0, digits, count, exponent);
}

/* ---- the digits of a text that are already the shortest ----------------------------------------------------- */

typedef unsigned __int128 cdc_u128;

static const uint64_t CDC_POW5[28] = {
    1ULL, 5ULL, 25ULL, 125ULL, 625ULL, 3125ULL, 15625ULL, 78125ULL, 390625ULL, 1953125ULL, 9765625ULL,
    48828125ULL, 244140625ULL, 1220703125ULL, 6103515625ULL, 30517578125ULL, 152587890625ULL, 762939453125ULL,
    3814697265625ULL, 19073486328125ULL, 95367431640625ULL, 476837158203125ULL, 2384185791015625ULL,
    11920928955078125ULL, 59604644775390625ULL, 298023223876953125ULL, 1490116119384765625ULL,
    7450580596923828125ULL};

static inline int cdc_bits128(cdc_u128 value) {
    uint64_t high = (uint64_t)(value >> 64), low = (uint64_t)value;
    if (high) return 128 - __builtin_clzll(high);
    return low ? 64 - __builtin_clzll(low) : 0;
}

/* The sign of digits x 10^power - bound x 2^shift (-1, 0, 1) in `*sign`, computed exactly: 1, or 0 when the numbers
   do not fit in 127 bits (digits < 2^58, bound < 2^56, |power| <= 27). */
static inline int cdc_compare(uint64_t digits, int power, uint64_t bound, int shift, int *sign) {
    if (power > 27 || power < -27) return 0;
    /* digits x 5^power x 2^(power - shift) against bound, both sides times 5^-power when power < 0 */
    cdc_u128 left = (cdc_u128)digits * CDC_POW5[power > 0 ? power : 0];
    cdc_u128 right = (cdc_u128)bound * CDC_POW5[power < 0 ? -power : 0];
    int twos = power - shift;
    if (twos > 0) {
        if (left && cdc_bits128(left) + twos > 127) return 0;
        left <<= twos;
    } else if (twos < 0) {
        if (right && cdc_bits128(right) - twos > 127) return 0;
        right <<= -twos;
    }
    *sign = left < right ? -1 : left > right;
    return 1;
}

/* Whether digits x 10^power reads back as the double m x 2^k (the interval between its neighbours' midpoints, the
   midpoints in when m is even: round half to even), in `*inside`: 1, or 0 when it cannot tell. `lower` is the
   lower midpoint's distance in quarters of 2^k (2, or 1 below a power of two). */
static inline int cdc_reads_back(uint64_t digits, int power, uint64_t m, int k, int lower, int *inside) {
    int below, above;
    if (!cdc_compare(digits, power, 4 * m - (uint64_t)lower, k - 2, &below) ||
        !cdc_compare(digits, power, 4 * m + 2, k - 2, &above)) {
        return 0;
    }
    int even = (m & 1) == 0;
    *inside = (below > 0 || (below == 0 && even)) && (above < 0 || (above == 0 && even));
    return 1;
}

/* The significant digits of a finite, non-zero float text as PostgreSQL writes it ([-]digits[.digits][e±digits]),
   when they are repr's digits of `value`, the double the text reads as: into `digits` (room for 17), their count, and
   `*exponent` the decimal exponent of the first. 0 for any other text, or when it cannot tell. */
static inline int shortest_text_digits(const char *text, Py_ssize_t length, double value, char *digits,
                                       int *exponent) {
    Py_ssize_t i = text[0] == '-' ? 1 : 0;
    int count = 0, point = -1, whole = 0, first = -1, seen = 0;
    uint64_t significand = 0;
    for (; i < length && text[i] != 'e'; i++) {
        char c = text[i];
        if (c == '.') {
            if (point >= 0) return 0;
            point = seen;
            continue;
        }
        if (c < '0' || c > '9') return 0;
        if (point < 0) whole++;
        seen++;
        if (first < 0 && c == '0') continue;
        if (first < 0) first = seen - 1;
        if (count == 17) return 0; /* more than repr ever writes: not the shortest */
        digits[count++] = c;
        significand = significand * 10 + (uint64_t)(c - '0');
    }
    if (seen == 0 || first < 0) return 0;
    int power10 = 0;
    if (i < length) { /* e, an optional sign, 1 to 4 digits */
        i++;
        int negative = i < length && text[i] == '-';
        if (i < length && (text[i] == '-' || text[i] == '+')) i++;
        if (i == length || length - i > 4) return 0;
        for (; i < length; i++) {
            if (text[i] < '0' || text[i] > '9') return 0;
            power10 = power10 * 10 + (text[i] - '0');
        }
        if (negative) power10 = -power10;
    }
    while (count > 1 && digits[count - 1] == '0') {
        count--;
        significand /= 10;
    }
    *exponent = whole - 1 - first + power10;
    int power = *exponent - (count - 1); /* the value is significand x 10^power */
    uint64_t bits;
    double magnitude = fabs(value);
    memcpy(&bits, &magnitude, sizeof bits);
    int biased = (int)(bits >> 52);
    if (biased == 0 || biased == 0x7FF) return 0; /* subnormal (another interval), or not finite */
    uint64_t m = (bits & ((1ULL << 52) - 1)) | (1ULL << 52);
    int k = biased - 1075, lower = m == (1ULL << 52) && biased > 1 ? 1 : 2;
    /* No shorter decimal reads back: not the nearest of count - 1 digits on either side (the decimals that read
       back make an interval)... */
    uint64_t shorter[2] = {significand / 10 * 10, (significand / 10 + 1) * 10};
    for (int c = 0; c < 2; c++) {
        int inside;
        if (shorter[c] == 0) continue; /* zero never reads back as a non-zero value */
        if (!cdc_reads_back(shorter[c], power, m, k, lower, &inside) || inside) return 0;
    }
    /* ...and of those of as many digits, the text's is the nearest to the value, less than half a unit of its last
       digit away: (2 x significand - 1) x 10^power < m x 2^(k + 1) < (2 x significand + 1) x 10^power (at exactly
       half, repr rounds to the even digit: left to it). */
    int below, above;
    if (!cdc_compare(2 * significand - 1, power, m, k + 1, &below) ||
        !cdc_compare(2 * significand + 1, power, m, k + 1, &above) || below >= 0 || above <= 0) {
        return 0;
    }
    return count;
}

/* Double.toString of `value`, the finite double the float text `text` reads as, at `out` (room for
   CDC_JAVA_DOUBLE_TEXT_MAX): from the text's digits when they are the shortest (shortest_text_digits), else as
   java_double_text writes it. Its length, or -1 with an exception set. */
static inline int java_double_of_text(char *out, const char *text, Py_ssize_t length, double value) {
    char digits[17];
    int exponent;
    int count = value != 0 && length > 0 ? shortest_text_digits(text, length, value, digits, &exponent) : 0;
    /* one digit: Java's closest two-digit decimal is that digit and 0, for any normal value */
    if (count > 0) return java_format(out, value < 0, digits, count, exponent);
    return java_double_text(out, value);
}

#endif
