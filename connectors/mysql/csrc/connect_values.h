/* Values as JsonConverter writes them in an event (connectors/events/json_converter.py), for the column writers of
   binrows.c that write them without a Python call: a float64 as Java's Double.toString prints it and a float32 as
   Float.toString does (the digits and their text by the shared java_double.h), a day or an instant as a count from
   the epoch (the days by the shared civil_days.h). A Decimal's base64 is the shared unscaled_decimal.h's. */

#ifndef CDC_CONNECT_VALUES_H
#define CDC_CONNECT_VALUES_H

#include <float.h>
#include <math.h>
#include <stdint.h>

#include "civil_days.h"
#include "java_double.h"
#include "json_text.h"
#include "unscaled_decimal.h"

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
    long long days = days_from_civil(year, month, day);
    return ((days * 86400 + hour * 3600LL + minute * 60LL + second) * 1000000LL) + micro;
}

/* Python's `micros // 1000`. */
static inline long long floor_millis(long long micros) {
    return micros >= 0 ? micros / 1000 : -((-micros + 999) / 1000);
}

/* Jackson's text of a float64 (json_converter._floating with java_double): NaN and the infinities quoted, any other
   value as java_double_text writes it; -1 with an exception set. */
static inline int put_java_double(Buffer *out, double value) {
    if (isnan(value)) return put(out, "\"NaN\"", 5);
    if (isinf(value)) return value > 0 ? put(out, "\"Infinity\"", 10) : put(out, "\"-Infinity\"", 11);
    char text[CDC_JAVA_DOUBLE_TEXT_MAX];
    int length = java_double_text(text, value);
    return length < 0 ? -1 : put(out, text, length);
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
    char digits[CDC_JAVA_DIGITS_MAX];
    int exponent, count = 0;
    for (int precision = 0; precision < 9 && count == 0; precision++) {
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
    if (count == 0) count = formatted_digits(magnitude, 'e', 8, digits, &exponent);
    if (count == 1) count = formatted_digits(magnitude, 'e', 1, digits, &exponent);
    if (count < 0) return -1;
    char text[CDC_JAVA_DOUBLE_TEXT_MAX];
    return put(out, text, java_format(text, single < 0, digits, count, exponent));
}

#endif
