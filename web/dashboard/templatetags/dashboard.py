"""Number formats of the dashboard; static/dashboard/live.js formats live values the same way (`fmt`)."""

from __future__ import annotations

import datetime
import json

from django import template

from web.connectors.validation import NAME_RULE

register = template.Library()


@register.filter
def ms(value) -> str:
    """Milliseconds for people: 850 ms, 3.2 s, 4 min 10 s, 2 h 5 min; an em dash when unknown."""
    if value is None or value == "":
        return "—"
    value = float(value)
    if value < 1000:
        return f"{value:.0f} ms"
    seconds = value / 1000
    if seconds < 60:
        return f"{seconds:.1f} s"
    if seconds < 3600:
        return f"{int(seconds // 60)} min {int(seconds % 60)} s"
    return f"{int(seconds // 3600)} h {int(seconds % 3600 // 60)} min"


@register.filter
def seconds(value) -> str:
    return "—" if value is None or value == "" else ms(float(value) * 1000)


@register.filter
def rate(value) -> str:
    if value is None or value == "":
        return "—"
    value = float(value)
    return f"{value:.0f}/s" if value >= 100 else f"{value:.1f}/s"


@register.filter
def count(value) -> str:
    """Thousands separated by thin spaces: 1 234 567."""
    if value is None or value == "":
        return "—"
    return f"{int(value):,}".replace(",", "\u202f")


@register.filter
def percent(value) -> str:
    return "—" if value is None else f"{round(float(value))} %"


@register.filter
def as_json(value) -> str:
    """Canonical JSON (sorted keys), the form the token fields and the API accept; "—" for nothing."""
    if value is None or value == "":
        return "—"
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)


@register.filter
def epoch_ms(value) -> datetime.datetime | None:
    """Milliseconds since the epoch as an aware datetime, for `|date` (None when not a number)."""
    try:
        return datetime.datetime.fromtimestamp(int(value) / 1000, datetime.UTC)
    except (TypeError, ValueError, OverflowError, OSError):
        return None


@register.filter
def epoch_seconds(value) -> datetime.datetime | None:
    return epoch_ms(int(value) * 1000) if isinstance(value, int) else None


@register.simple_tag
def name_rule() -> str:
    """The one wording of the connector name rule."""
    return NAME_RULE
