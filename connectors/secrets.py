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

_SCHEME = re.compile(r"^(mongodb(?:\+srv)?://)(.*)$", re.DOTALL)
# What may follow the `@` that ends the user info: a host list, then the path, the options or the end.
_AFTER_USERINFO = re.compile(r"[A-Za-z0-9.\-_~%\[\]:,]*(?=[/?]|$)")
# Characters that must be percent-encoded inside the user info; finding one means the user mistyped the URI.
_UNESCAPED_IN_USERINFO = re.compile(r"[@/?#\[\]]|%(?![0-9A-Fa-f]{2})")


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


def split_userinfo(uri: str) -> tuple[str, str | None, str] | None:
    """(scheme, user info or None, the rest) of a MongoDB URI; None when it is not one.

    The user info ends at the LAST `@` followed by a host list, not the first: a password typed with an unescaped
    `@`, `/` or `?` (`mongodb://u:p@ss@host`) is then wholly user info, and no part of it is taken for a host.
    """
    match = _SCHEME.match(uri.strip())
    if match is None:
        return None
    scheme, body = match.groups()
    for at in reversed([index for index, char in enumerate(body) if char == "@"]):
        if _AFTER_USERINFO.match(body, at + 1):
            return scheme, body[:at], body[at + 1:]
    return scheme, None, body


def userinfo_is_malformed(userinfo: str) -> bool:
    """Whether user info holds a character that must be percent-encoded there (`@ / ? # [ ]`, a second `:`, a
    stray `%`): the user mistyped the URI, and any parser would split it somewhere inside the password."""
    return bool(_UNESCAPED_IN_USERINFO.search(userinfo)) or userinfo.count(":") > 1


def redact_connection_string(uri: str) -> str:
    """The URI with its password and secret options masked; anything unparsable is masked whole. Malformed user
    info is masked whole, user name included (which part of it is the user name is a guess)."""
    parts = split_userinfo(uri)
    if parts is None:
        return MASK
    scheme, userinfo, rest = parts
    shown_userinfo = ""
    if userinfo is not None and userinfo_is_malformed(userinfo):
        shown_userinfo = f"{MASK}@"
    elif userinfo is not None:
        user, has_password, _ = userinfo.partition(":")
        shown_userinfo = f"{user}:{MASK}@" if has_password else f"{user}@"
    hosts_and_db, has_query, query = rest.partition("?")
    if has_query:
        query = _redact_query(query)
        rest = f"{hosts_and_db}?{query}"
    return f"{scheme}{shown_userinfo}{rest}"


def _redact_query(query: str) -> str:
    shown = []
    for pair in re.split(r"[&;]", query):
        name, has_value, _ = pair.partition("=")
        if has_value and unquote(name).lower() in SECRET_URI_OPTIONS:
            shown.append(f"{name}={MASK}")
        else:
            shown.append(pair)
    return "&".join(shown)
