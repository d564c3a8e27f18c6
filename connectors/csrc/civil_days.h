/* Days from 1970-01-01 to a proleptic Gregorian date, for the date columns of every source's row writers. */

#ifndef CDC_CIVIL_DAYS_H
#define CDC_CIVIL_DAYS_H

/* Days since 1970-01-01 of year-month-day (astronomical year: 1 BC is year 0), as temporal.days_from_civil and
   `(date - date(1970, 1, 1)).days` count them: floor division throughout, signed, so that any year a long long holds
   (PostgreSQL's dates reach 5874897 AD and 4713 BC, its infinities are written as years of -5877611) counts right. */
static inline long long days_from_civil(long long year, int month, int day) {
    year -= month <= 2;
    long long era = (year >= 0 ? year : year - 399) / 400;
    unsigned year_of_era = (unsigned)(year - era * 400); /* 0 to 399: unsigned division is the cheaper */
    long long day_of_year = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1;
    long long day_of_era = (long long)(year_of_era * 365 + year_of_era / 4 - year_of_era / 100) + day_of_year;
    return era * 146097 + day_of_era - 719468;
}

#endif
