"""A time typed in a form or query: epoch milliseconds or ISO-8601; anything else is a 400 naming it."""

from __future__ import annotations

import datetime

from django.core.exceptions import BadRequest


def parse_time(raw: str) -> int:
    """Epoch milliseconds, or an ISO-8601 date/time (UTC unless it carries an offset)."""
    raw = raw.strip()
    if not raw:
        raise BadRequest("start=timestamp needs timestamp: an ISO-8601 time such as 2026-01-31T12:00:00Z, or "
                         "milliseconds since the epoch.")
    if raw.isdigit():
        if len(raw) > 15:
            raise BadRequest(f"timestamp={raw} is out of range.")
        return int(raw)
    try:
        moment = datetime.datetime.fromisoformat(raw.replace("Z", "+00:00"))
    except ValueError:
        raise BadRequest(f"timestamp={raw} is not a time: give ISO-8601 (2026-01-31T12:00:00Z) or epoch "
                         "milliseconds.") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    if moment.year < 1970:
        raise BadRequest(f"timestamp={raw} is before 1970.")
    return int(moment.timestamp() * 1000)
