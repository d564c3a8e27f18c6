"""Aggregation expressions (`$expr`, computed projections, pipeline updates), evaluated by mongomock's
expression engine, plus the few helpers the emulator needs around it."""

from __future__ import annotations

from mongomock import OperationFailure as MockOperationFailure
from mongomock import aggregate as _mock

from devstack.mongo.bsonutil import MISSING, is_number, number_value
from devstack.mongo.errors import CommandError


def evaluate(expr, doc, variables: dict | None = None):
    try:
        if variables:
            doc = dict(doc)
            for name, value in variables.items():
                doc["$$" + name] = value
        return _mock._parse_expression(expr, doc, ignore_missing_keys=True)
    except MockOperationFailure as exc:
        raise CommandError(2, str(exc)) from None
    except NotImplementedError as exc:
        raise CommandError(2, f"expression not supported by the emulator: {exc}") from None
    except KeyError:
        return None


def truthy_expr(value) -> bool:
    if value is None or value is MISSING or value is False:
        return False
    if is_number(value):
        return number_value(value) != 0
    return True


def run_stages(docs: list, stages: list, database=None) -> list:
    """Run pipeline stages through mongomock (documents are copies the caller owns)."""
    try:
        return list(_mock.process_pipeline(docs, database, stages, None))
    except MockOperationFailure as exc:
        raise CommandError(getattr(exc, "code", None) or 2, str(exc)) from None
    except NotImplementedError as exc:
        raise CommandError(2, f"pipeline stage not supported by the emulator: {exc}") from None
