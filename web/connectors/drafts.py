"""Turning an incoming property map into validated Parts, for every entry point (API, Kafka Connect surface, admin,
CLI): masked secrets resolved against the stored ones, partial updates merged, then the whole map validated by the
engine. Nothing is saved here."""

from __future__ import annotations

from typing import Any

from connectors.config.types import Problem
from connectors.secrets import MASK
from connectors.sources import secret_destination
from web.connectors import properties as props
from web.connectors import validation
from web.connectors.definitions import parts_of
from web.connectors.models import Connector


class InvalidConfiguration(ValueError):
    def __init__(self, problems: list[Problem]):
        self.problems = problems
        super().__init__("; ".join(problem.message for problem in problems))


def prepare(given: Any, current: Connector | None = None, *, merge: bool = False) -> props.Parts:
    """Validated Parts for `given` (a Debezium property map).

    merge=False: `given` is the whole configuration (create, PUT). merge=True: `given` changes the stored one
    (PATCH): a key set to null removes it, hash masks and snapshot overrides are replaced as a group.
    """
    if not isinstance(given, dict):
        raise InvalidConfiguration([Problem("", "the configuration must be an object of properties")])
    stored = parts_of(current) if current is not None else None
    unmasked, mask_problems = props.unmask(given, stored)
    if merge and stored is not None:
        flat = _merged(props.join(stored), unmasked)
    else:
        flat = {key: value for key, value in unmasked.items() if value is not None}
    problems = [Problem(prop, message) for prop, message in mask_problems]
    problems += validation.check(flat)
    if stored is not None and not problems:
        problems += moved_secret_problems(flat, props.join(stored), kept_secrets(given, stored, merge))
    if problems:
        raise InvalidConfiguration(problems)
    return props.split(flat)


def kept_secrets(given: dict[str, Any], stored: props.Parts, merge: bool) -> set[str]:
    """The secret properties whose stored value this request keeps instead of giving it."""
    kept = {key for key in props.PASSWORDS if given.get(key) == MASK}
    connection_string = given.get(props.CONNECTION_STRING)
    if isinstance(connection_string, str) and MASK in connection_string:
        kept.add(props.CONNECTION_STRING)
    if merge:
        stored_secrets = {props.password_property(stored.properties): stored.password,
                          props.CONNECTION_STRING: stored.connection_string}
        kept |= {key for key, value in stored_secrets.items() if value and key not in given}
    return kept


def moved_secret_problems(flat: dict[str, Any], stored_flat: dict[str, Any], kept: set[str]) -> list[Problem]:
    kept = {key for key in kept if flat.get(key)}
    if not kept or secret_destination(flat) == secret_destination(stored_flat):
        return []
    what = "the connection string" if kept == {props.CONNECTION_STRING} else "the password"
    return [Problem(key, f"give {what} again: this change makes the connector log in somewhere else (another host, "
                         f"port or seed list), and a stored secret is only sent to where it was stored for")
            for key in sorted(kept)]


def check(given: Any, current: Connector | None = None, *, merge: bool = False) -> list[Problem]:
    try:
        prepare(given, current, merge=merge)
    except InvalidConfiguration as error:
        return error.problems
    return []


def _merged(base: dict[str, Any], changes: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for kind in props.HASH_PREFIXES:  # each kind's hash properties are replaced as a group
        if any((props.hash_match(key) or ("",))[0] == kind for key in changes):
            merged = {key: value for key, value in merged.items() if (props.hash_match(key) or ("",))[0] != kind}
    if props.SNAPSHOT_OVERRIDES in changes:
        merged = {key: value for key, value in merged.items()
                  if not key.startswith(props.SNAPSHOT_OVERRIDES + ".")}
    if props.TOPIC_PREFIX_ALIAS in changes:
        merged.pop(props.TOPIC_PREFIX, None)
    for key, value in changes.items():
        if value is None:
            merged.pop(key, None)
        else:
            merged[key] = value
    return merged


def check_rows(connector: Connector, rows: list[props.FilterRow]) -> list[Problem]:
    """Problems of the connector's configuration with its filter rows replaced by `rows`."""
    parts = parts_of(connector)
    parts.filters = rows
    return validation.check(props.join(parts))


def rows_of(filters) -> list[props.FilterRow]:
    return [props.FilterRow(r.kind, r.value, r.argument, r.salt) for r in filters]
