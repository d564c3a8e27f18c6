/* Java's Double.toString (JDK 19+), the text Jackson writes for a float64, as json_converter.java_double writes it:
   the shortest digits that read back as the value (Python's repr), the closest two-digit decimal where one digit
   would do, plain notation for decimal exponents -3 to 6, d.dddEn otherwise. */

#ifndef CDC_JAVA_DOUBLE_H
#define CDC_JAVA_DOUBLE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <string.h>

#include "decimal_text.h"

/* Room for any text java_double_text writes (the longest: "-" + 17 digits + "." + "E-324", 24). */
#define CDC_JAVA_DOUBLE_TEXT_MAX 32

/* json_converter._java_digits of a positive number's text (digits, optional point, optional e±n): its significant
   digits without trailing zeros into `digits` (room for 20), their count; `*exponent` the decimal exponent of the
   first. 0 when the text has more than 20 or none but zeros (repr has at most 17). */
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
        if (count == 20) return 0;
        digits[count++] = *p;
        seen++;
    }
    if (first < 0) return 0;
    int power = (*p == 'e' || *p == 'E') ? atoi(p + 1) : 0;
    *exponent = integer_digits - 1 - first + power;
    while (count > 1 && digits[count - 1] == '0') count--;
    return count;
}

/* Double.toString of a finite `value` at `out` (room for CDC_JAVA_DOUBLE_TEXT_MAX); its length, or -1 with an
   exception set (no memory). */
static inline int java_double_text(char *out, double value) {
    if (value == 0) {
        memcpy(out, signbit(value) ? "-0.0" : "0.0", signbit(value) ? 4 : 3);
        return signbit(value) ? 4 : 3;
    }
    double magnitude = fabs(value);
    char digits[20];
    int exponent = 0;
    char *text = PyOS_double_to_string(magnitude, 'r', 0, 0, NULL);
    if (text == NULL) return -1;
    int count = java_digits(text, digits, &exponent);
    PyMem_Free(text);
    if (count == 1) { /* 5e-324 is 4.9E-324 */
        text = PyOS_double_to_string(magnitude, 'e', 1, 0, NULL);
        if (text == NULL) return -1;
        count = java_digits(text, digits, &exponent);
        PyMem_Free(text);
    }
    if (count == 0) {
        PyErr_SetString(PyExc_SystemError, "java_double_text: no digits");
        return -1;
    }
    int n = 0;
    if (value < 0) out[n++] = '-';
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

#endif
