/* Values as JsonConverter writes them in an event (connectors/events/json_converter.py), for the column writers of
   binrows.c that write them without a Python call: a float64 as Java's Double.toString prints it, a Decimal's
   unscaled value as BigInteger.toByteArray()'s base64, a day or an instant as a count from the epoch. */

#ifndef CDC_CONNECT_VALUES_H
#define CDC_CONNECT_VALUES_H

#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decimal_text.h"
#include "json_text.h"

/* Days from 1970-01-01 to a proleptic Gregorian date (month 1..12): `(date - date(1970, 1, 1)).days`. */
static inline long long days_from_civil(long long year, unsigned month, unsigned day) {
    year -= month <= 2;
    long long era = (year >= 0 ? year : year - 399) / 400;
    unsigned year_of_era = (unsigned)(year - era * 400);
    unsigned day_of_year = (153 * (month > 2 ? month - 3 : month + 9) + 2) / 5 + day - 1;
    unsigned day_of_era = year_of_era * 365 + year_of_era / 4 - year_of_era / 100 + day_of_year;
    return era * 146097 + (long long)day_of_era - 719468;
}

/* Whether year-month-day (hour:minute:second.micro) is one datetime.date (datetime.datetime) accepts. */
static inline int valid_date(int year, int month, int day) {
    static const int days_in_month[] = {0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    if (year < 1 || year > 9999 || month < 1 || month > 12 || day < 1) return 0;
    int leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    return day <= days_in_month[month] + (month == 2 && leap);
}

static inline int valid_time(int hour, int minute, int second, long micro) {
    return hour >= 0 && hour < 24 && minute >= 0 && minute < 60 && second >= 0 && second < 60 && micro >= 0 &&
           micro < 1000000;
}

/* Microseconds from the epoch of a naive datetime (types._micros(value - EPOCH)). */
static inline long long epoch_micros(int year, int month, int day, int hour, int minute, int second, long micro) {
    long long days = days_from_civil(year, (unsigned)month, (unsigned)day);
    return ((days * 86400 + hour * 3600LL + minute * 60LL + second) * 1000000LL) + micro;
}

/* Python's `micros // 1000`. */
static inline long long floor_millis(long long micros) {
    return micros >= 0 ? micros / 1000 : -((-micros + 999) / 1000);
}

static inline int put_int64(Buffer *out, long long value) {
    char text[CDC_INT64_TEXT_MAX];
    return put(out, text, decimal_int64(text, value));
}

/* The significant digits (no leading or trailing zeros, "0" for none) of a positive number's text as Python's repr
   or "%.1e" writes it, and the decimal exponent of the first (json_converter._java_digits). */
static inline int java_digits(const char *text, char *digits, int *exponent) {
    int count = 0, point = -1, seen = 0, first = 0, exponent_part = 0;
    const char *at = text;
    for (; *at && *at != 'e' && *at != 'E'; at++) {
        if (*at == '.') {
            point = seen;
            continue;
        }
        if (*at < '0' || *at > '9') return -1;
        if (count == 0 && *at == '0') {
            seen++;
            continue;
        }
        if (count == 0) first = seen;
        if (count >= 40) return -1;
        digits[count++] = *at;
        seen++;
    }
    if (*at) exponent_part = atoi(at + 1);
    if (point < 0) point = seen;
    while (count > 1 && digits[count - 1] == '0') count--;
    if (count == 0) {
        digits[count++] = '0';
        first = point - 1;
    }
    *exponent = point - first - 1 + exponent_part;
    return count;
}

/* Java's text of a positive or negative number of `count` significant digits whose first has the decimal exponent
   `exponent` (json_converter._java_format). */
static inline int put_java_format(Buffer *out, int negative, const char *digits, int count, int exponent) {
    char written[96];
    int at = 0;
    if (negative) written[at++] = '-';
    if (exponent >= -3 && exponent < 7) {
        if (exponent >= 0) {
            for (int i = 0; i <= exponent; i++) written[at++] = i < count ? digits[i] : '0';
            written[at++] = '.';
            if (count > exponent + 1) {
                for (int i = exponent + 1; i < count; i++) written[at++] = digits[i];
            } else {
                written[at++] = '0';
            }
        } else {
            written[at++] = '0';
            written[at++] = '.';
            for (int i = 0; i < -exponent - 1; i++) written[at++] = '0';
            for (int i = 0; i < count; i++) written[at++] = digits[i];
        }
        return put(out, written, at);
    }
    written[at++] = digits[0];
    written[at++] = '.';
    if (count > 1) {
        for (int i = 1; i < count; i++) written[at++] = digits[i];
    } else {
        written[at++] = '0';
    }
    written[at++] = 'E';
    return put(out, written, at) < 0 ? -1 : put_int64(out, exponent);
}

/* The digits and exponent of PyOS_double_to_string(magnitude, code, precision); -1 with an exception set. */
static inline int formatted_digits(double magnitude, char code, int precision, char *digits, int *exponent) {
    char *text = PyOS_double_to_string(magnitude, code, precision, 0, NULL);
    if (text == NULL) return -1;
    int count = java_digits(text, digits, exponent);
    PyMem_Free(text);
    if (count < 0) PyErr_SetString(PyExc_ValueError, "a float's text the writer does not read");
    return count;
}

/* Jackson's text of a float64 (json_converter._floating with java_double); -1 with an exception set. */
static inline int put_java_double(Buffer *out, double value) {
    if (isnan(value)) return put(out, "\"NaN\"", 5);
    if (isinf(value)) return value > 0 ? put(out, "\"Infinity\"", 10) : put(out, "\"-Infinity\"", 11);
    if (value == 0) return signbit(value) ? put(out, "-0.0", 4) : put(out, "0.0", 3);
    char digits[48];
    int exponent;
    int count = formatted_digits(fabs(value), 'r', 0, digits, &exponent);
    /* JDK 19+: the closest two-digit decimal when the shortest has one digit */
    if (count == 1) count = formatted_digits(fabs(value), 'e', 1, digits, &exponent);
    return count < 0 ? -1 : put_java_format(out, value < 0, digits, count, exponent);
}

/* Jackson's text of a FLOAT column's value (types._float32, then json_converter._floating with java_float): the
   shortest decimal that reads back as the same 32-bit float, as Float.toString writes it; 1 where types._float32's
   struct.pack meets a value past the largest 32-bit float (the value, or a shorter decimal tried before the one that
   reads back: near FLT_MAX), which it refuses: the column's writer says so. */
static inline int put_java_float(Buffer *out, double value) {
    if (isfinite(value) && fabs(value) > FLT_MAX) return 1;
    float single = (float)value;
    if (isnan(single)) return put(out, "\"NaN\"", 5);
    if (isinf(single)) return single > 0 ? put(out, "\"Infinity\"", 10) : put(out, "\"-Infinity\"", 11);
    double magnitude = fabs((double)single);
    if (magnitude == 0) return signbit(single) ? put(out, "-0.0", 4) : put(out, "0.0", 3);
    char digits[48];
    int exponent, count = -1;
    for (int precision = 0; precision < 9 && count < 0; precision++) {
        char *text = PyOS_double_to_string(magnitude, 'e', precision, 0, NULL);
        if (text == NULL) return -1;
        double back = PyOS_string_to_double(text, NULL, NULL);
        if ((back == -1.0 && PyErr_Occurred()) || back > FLT_MAX) {
            PyMem_Free(text);
            return PyErr_Occurred() ? -1 : 1;
        }
        if ((float)back == (float)magnitude) count = java_digits(text, digits, &exponent);
        PyMem_Free(text);
    }
    if (count < 0) count = formatted_digits(magnitude, 'e', 8, digits, &exponent);
    if (count == 1) count = formatted_digits(magnitude, 'e', 1, digits, &exponent);
    return count < 0 ? -1 : put_java_format(out, single < 0, digits, count, exponent);
}

#define CDC_DECIMAL_DIGITS_MAX 96 /* MariaDB's DECIMAL has 65 at most */

/* The JSON of a Decimal field whose unscaled value is the decimal `digits` (negative: minus it): a base64 string of
   BigInteger.toByteArray() (json_converter.big_integer_bytes), as JsonConverter writes it. */
static inline int put_unscaled_base64(Buffer *out, int negative, const char *digits, int count) {
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
            uint32_t top = limbs[j];
            bits = 32 * j;
            while (top) {
                bits++;
                top >>= 1;
            }
            break;
        }
    }
    int length = bits / 8 + 1;
    unsigned char bytes[49];
    for (int i = 0; i < length; i++) {
        int from_end = length - 1 - i;
        unsigned char byte = (unsigned char)(limbs[from_end / 4] >> (8 * (from_end % 4)));
        bytes[i] = negative ? (unsigned char)~byte : byte;
    }
    static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char text[72];
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
    return put(out, text, at);
}

/* A decimal's text ("-"? digits ("." digits)?, as str(Decimal) or the binlog decoder writes it) as a Decimal field of
   scale `scale`: 1 when the text is not of that form or has another count of fraction digits (the Python writer
   says what it makes of it), else put_unscaled_base64's result. */
static inline int put_decimal_text(Buffer *out, const char *text, Py_ssize_t length, long scale) {
    char digits[CDC_DECIMAL_DIGITS_MAX];
    int count = 0, negative = 0, fraction = -1, whole = 0;
    Py_ssize_t i = 0;
    if (i < length && text[i] == '-') {
        negative = 1;
        i++;
    }
    for (; i < length; i++) {
        char c = text[i];
        if (c == '.' && fraction < 0) {
            fraction = 0;
            continue;
        }
        if (c < '0' || c > '9' || count >= CDC_DECIMAL_DIGITS_MAX) return 1;
        if (fraction >= 0) fraction++; else whole++;
        if (count == 0 && c == '0') continue; /* leading zeros */
        digits[count++] = c;
    }
    if (whole + (fraction > 0 ? fraction : 0) == 0 || (fraction < 0 ? 0 : fraction) != scale) return 1;
    return put_unscaled_base64(out, negative, digits, count);
}

#endif
