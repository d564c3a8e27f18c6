"""PostgreSQL's text forms of dates, times, timestamps and intervals (DateStyle ISO, IntervalStyle postgres, as the
replication connection sets them) parsed into the numbers Debezium writes. Years beyond 9999 and BC dates are
handled with day arithmetic on the proleptic Gregorian calendar (Python's datetime stops at year 1)."""

from __future__ import annotations

import re

US_PER_SECOND = 1_000_000
US_PER_DAY = 86_400 * US_PER_SECOND
DAYS_PER_MONTH_AVG = 365.25 / 12.0

# What Debezium writes for ±infinity (PostgreSQL JDBC's PGStatement.DATE_POSITIVE/NEGATIVE_INFINITY read as micros)
TIMESTAMP_POSITIVE_INFINITY_US = 9223372036825200000
TIMESTAMP_NEGATIVE_INFINITY_US = -9223372036832400000

_DATE = re.compile(r"^(\d{4,})-(\d\d)-(\d\d)( BC)?$")
_TIMESTAMP = re.compile(
    r"^(\d{4,})-(\d\d)-(\d\d) (\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?([+-]\d\d(?::\d\d(?::\d\d)?)?)?( BC)?$"
)
# A timestamp in UTC of years 1-9999 (AD, four digits), as a server whose TimeZone is UTC sends them: the text is
# already the instant in UTC, so it is rewritten as text (1.3 µs against 6.2 µs parsed and computed).
_UTC_TIMESTAMP = re.compile(r"(\d{4}-\d\d-\d\d) (\d\d:\d\d:\d\d)(?:\.(\d{1,6}))?\+00(?::00(?::00)?)?$")
_TIME = re.compile(r"^(\d\d):(\d\d):(\d\d)(?:\.(\d{1,6}))?([+-]\d\d(?::\d\d(?::\d\d)?)?)?$")
_INTERVAL_PART = re.compile(r"([+-]?\d+) (year|years|mon|mons|day|days)\b")
_INTERVAL_TIME = re.compile(r"([+-])?(\d+):(\d\d):(\d\d)(?:\.(\d{1,6}))?$")


INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1


class TemporalFormatError(ValueError):
    pass


def saturated_int64(value: int) -> int:
    """`value` held to an int64 field's range, as Java's TimeUnit conversions and (long) casts of a double
    saturate: PostgreSQL's last timestamps in microseconds and its longest intervals are beyond it."""
    return INT64_MIN if value < INT64_MIN else INT64_MAX if value > INT64_MAX else value


def days_from_civil(year: int, month: int, day: int) -> int:
    """Days since 1970-01-01 of a proleptic Gregorian date (astronomical year: 1 BC is year 0)."""
    year -= month <= 2
    era = year // 400  # floor division: the algorithm's (y - 399) / 400 is its C form for truncating division
    year_of_era = year - era * 400
    day_of_year = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    day_of_era = year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year
    return era * 146097 + day_of_era - 719468


def civil_from_days(days: int) -> tuple[int, int, int]:
    days += 719468
    era = days // 146097
    day_of_era = days - era * 146097
    year_of_era = (day_of_era - day_of_era // 1460 + day_of_era // 36524 - day_of_era // 146096) // 365
    year = year_of_era + era * 400
    day_of_year = day_of_era - (365 * year_of_era + year_of_era // 4 - year_of_era // 100)
    mp = (5 * day_of_year + 2) // 153
    day = day_of_year - (153 * mp + 2) // 5 + 1
    month = mp + (3 if mp < 10 else -9)
    return year + (month <= 2), month, day


def _year(text: str, bc: str | None) -> int:
    year = int(text)
    return 1 - year if bc else year


def _micros(fraction: str | None) -> int:
    return int(fraction.ljust(6, "0")) if fraction else 0


def _offset_seconds(text: str | None) -> int:
    if not text:
        return 0
    sign = -1 if text[0] == "-" else 1
    parts = [int(p) for p in text[1:].split(":")]
    parts += [0] * (3 - len(parts))
    return sign * (parts[0] * 3600 + parts[1] * 60 + parts[2])


def date_days(text: str) -> int:
    match = _DATE.match(text)
    if not match:
        raise TemporalFormatError(f"not an ISO date: {text!r}")
    year, month, day, bc = match.groups()
    return days_from_civil(_year(year, bc), int(month), int(day))


def timestamp_micros(text: str) -> int:
    """Microseconds since the epoch of a timestamp (with or without zone: the offset, if any, is applied)."""
    match = _TIMESTAMP.match(text)
    if not match:
        raise TemporalFormatError(f"not an ISO timestamp: {text!r}")
    year, month, day, hour, minute, second, fraction, offset, bc = match.groups()
    days = days_from_civil(_year(year, bc), int(month), int(day))
    seconds = int(hour) * 3600 + int(minute) * 60 + int(second) - _offset_seconds(offset)
    return days * US_PER_DAY + seconds * US_PER_SECOND + _micros(fraction)


def time_micros(text: str) -> tuple[int, int]:
    """(microseconds past midnight, offset seconds) of a time or timetz; 24:00:00 is a whole day."""
    match = _TIME.match(text)
    if not match:
        raise TemporalFormatError(f"not an ISO time: {text!r}")
    hour, minute, second, fraction, offset = match.groups()
    micros = (int(hour) * 3600 + int(minute) * 60 + int(second)) * US_PER_SECOND + _micros(fraction)
    return micros, _offset_seconds(offset)


def _iso_year(year: int) -> str:
    # java.time's ISO_LOCAL_DATE: four digits, a sign beyond 9999 or before year 0
    if year > 9999:
        return f"+{year}"
    if year < 0:
        return f"-{-year:04d}"
    return f"{year:04d}"


def _fraction(micros: int, width: int | None) -> str:
    if width is not None and 0 < width <= 9:
        return "." + f"{micros:06d}000"[:width]
    if micros == 0:
        return ""
    return "." + f"{micros:06d}".rstrip("0")


def _fraction_of_digits(digits: str, width: int | None) -> str:
    """`_fraction(_micros(digits), width)` from the fraction's digits (up to 6) without the number."""
    if width is not None and 0 < width <= 9:
        return "." + digits.ljust(9, "0")[:width]
    digits = digits.rstrip("0")
    return "." + digits if digits else ""


def zoned_timestamp_text(text: str, fractional_width: int | None) -> str:
    """Debezium's ZonedTimestamp: the instant in UTC, ISO-8601 with 'Z'; `fractional_width` digits of fraction
    (the column's precision), or as few as needed when it is 0 or unknown."""
    utc = _UTC_TIMESTAMP.match(text)
    if utc is not None:
        date, clock, digits = utc.groups()
        return f"{date}T{clock}{_fraction_of_digits(digits or '', fractional_width)}Z"
    if text in ("infinity", "-infinity"):
        return text
    total = timestamp_micros(text)
    days, rest = divmod(total, US_PER_DAY)
    seconds, micros = divmod(rest, US_PER_SECOND)
    year, month, day = civil_from_days(days)
    clock = f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}"
    return f"{_iso_year(year)}-{month:02d}-{day:02d}T{clock}{_fraction(micros, fractional_width)}Z"


def zoned_time_text(text: str) -> str:
    """Debezium's ZonedTime: the time moved to UTC (wrapping within the day), ISO-8601 with 'Z'."""
    micros, offset = time_micros(text)
    micros = (micros - offset * US_PER_SECOND) % US_PER_DAY
    seconds, fraction = divmod(micros, US_PER_SECOND)
    return f"{seconds // 3600:02d}:{seconds // 60 % 60:02d}:{seconds % 60:02d}{_fraction(fraction, None)}Z"


def interval_fields(text: str) -> tuple[int, int, int, int, int, float]:
    """(years, months, days, hours, minutes, seconds) of an interval in IntervalStyle postgres, signs kept per field
    as PostgreSQL's JDBC driver's PGInterval holds them."""
    years = months = days = hours = minutes = 0
    seconds = 0.0
    rest = text.strip()
    for number, unit in _INTERVAL_PART.findall(rest):
        value = int(number)
        if unit.startswith("year"):
            years = value
        elif unit.startswith("mon"):
            months = value
        else:
            days = value
    remainder = _INTERVAL_PART.sub("", rest).strip()
    if remainder:
        match = _INTERVAL_TIME.match(remainder)
        if not match:
            raise TemporalFormatError(f"not an interval in IntervalStyle postgres: {text!r}")
        sign_text, h, m, s, fraction = match.groups()
        sign = -1 if sign_text == "-" else 1
        hours, minutes = sign * int(h), sign * int(m)
        seconds = sign * int(s) + sign * _micros(fraction) / US_PER_SECOND
    return years, months, days, hours, minutes, seconds


def interval_micro_duration(text: str) -> int:
    """Debezium's MicroDuration: months count as 365.25 / 12 days; computed in doubles as Debezium does."""
    years, months, days, hours, minutes, seconds = interval_fields(text)
    number_of_days = ((years * 12) + months) * DAYS_PER_MONTH_AVG + days
    number_of_seconds = (((number_of_days * 24 + hours) * 60) + minutes) * 60 + seconds
    return saturated_int64(int(number_of_seconds * 1e6))


def interval_iso_text(text: str) -> str:
    """Debezium's Interval (interval.handling.mode=string): P<y>Y<m>M<d>DT<h>H<m>M<s>S."""
    from connectors.events.json_converter import java_double

    years, months, days, hours, minutes, seconds = interval_fields(text)
    plain = _plain_seconds(java_double(seconds))
    return f"P{years}Y{months}M{days}DT{hours}H{minutes}M{plain}S"


def _plain_seconds(java_text: str) -> str:
    """BigDecimal.valueOf(double).stripTrailingZeros().toPlainString()."""
    from decimal import Decimal

    value = Decimal(java_text.replace("E", "e")).normalize()
    if value == 0:
        return "0"
    return format(value, "f")
