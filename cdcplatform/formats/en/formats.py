"""The one date/time format of every page (the dashboard's YYYY-MM-DD HH:MM:SS, 24-hour) for what Django formats
itself: the admin's lists and read-only fields and any `|date` without a format."""

DATE_FORMAT = "Y-m-d"
SHORT_DATE_FORMAT = "Y-m-d"
TIME_FORMAT = "H:i:s"
DATETIME_FORMAT = "Y-m-d H:i:s"
SHORT_DATETIME_FORMAT = "Y-m-d H:i:s"
