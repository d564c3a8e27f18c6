"""Keeping credentials out of logs, API responses and events.

`Secret` wraps a sensitive string: ``str()``, ``repr()`` and f-strings show a mask, and only
``reveal()`` returns the value (call it where the value is handed to a driver, nowhere else).
`redact_connection_string` masks the password and secret options inside a MongoDB URI while
keeping hosts and ordinary options readable.
"""

from __future__ import annotations

import re
from urllib.parse import unquote

MASK = "********"

# URI options whose values are credentials (case-insensitive, as MongoDB URI options are).
SECRET_URI_OPTIONS = frozenset(
    {
        "tlscertificatekeyfilepassword",
        "sslpemkeypassword",
        "authmechanismproperties",
        "password",
    }
)

_URI = re.compile(r"^(?P<scheme>mongodb(?:\+srv)?://)(?:(?P<userinfo>[^@/?]*)@)?(?P<rest>.*)$", re.DOTALL)


class Secret:
    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        if isinstance(value, Secret):
            value = value.reveal()
        self._value = str(value)

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return f"Secret('{MASK}')"

    def __str__(self) -> str:
        return MASK

    def __format__(self, spec: str) -> str:
        return MASK

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)

    def __reduce__(self):
        # Pickling would write the clear value to wherever the pickle goes (Celery, caches).
        raise TypeError("Secret values cannot be pickled; pass the configuration properties instead")


def redact_connection_string(uri: str) -> str:
    """The URI with its password and secret options masked; anything unparsable is masked whole."""
    match = _URI.match(uri.strip())
    if match is None:
        return MASK
    userinfo = match.group("userinfo")
    rest = match.group("rest")
    shown_userinfo = ""
    if userinfo is not None:
        user, has_password, _ = userinfo.partition(":")
        shown_userinfo = f"{user}:{MASK}@" if has_password else f"{user}@"
    hosts_and_db, has_query, query = rest.partition("?")
    if has_query:
        query = _redact_query(query)
        rest = f"{hosts_and_db}?{query}"
    return f"{match.group('scheme')}{shown_userinfo}{rest}"


def _redact_query(query: str) -> str:
    shown = []
    for pair in re.split(r"[&;]", query):
        name, has_value, _ = pair.partition("=")
        if has_value and unquote(name).lower() in SECRET_URI_OPTIONS:
            shown.append(f"{name}={MASK}")
        else:
            shown.append(pair)
    return "&".join(shown)
