"""Column defaults as Debezium's PostgresDefaultValueConverter reads them: the expressions `pg_get_expr` gives for
each kind of DEFAULT (the live test, tests/postgres/test_deletes.py, reads them from the real catalog)."""

from __future__ import annotations

import decimal

import pytest

from connectors.events.schema import NO_DEFAULT
from connectors.postgres import types as t
from connectors.postgres.defaults import column_default
from connectors.postgres.types import ColumnType, TypeSettings, builtin, column_mapping

NUMERIC_6_2 = ((6 << 16) | 2) + 4
EPOCH_TZ = "1970-01-01T00:00:00.000000Z"


@pytest.mark.parametrize(("column_type", "expression", "settings", "expected"), [
    (builtin(t.INT4), "nextval('t_id_seq'::regclass)", {}, 0),  # a function: the type's placeholder
    (builtin(t.INT4), "42", {}, 42),
    (builtin(t.INT4), "'-1'::integer", {}, -1),
    (builtin(t.INT8), "'9223372036854775807'::bigint", {}, 2**63 - 1),
    (builtin(t.TEXT), "'abc'::text", {}, "abc"),
    (builtin(t.TEXT), "'ab''c'::text", {}, "ab"),  # Debezium's lazy '(.*?)' stops at the doubled quote
    (builtin(t.TEXT), "NULL::text", {}, NO_DEFAULT),
    (builtin(t.BOOL), "true", {}, True),
    (builtin(t.TIMESTAMPTZ), "now()", {}, EPOCH_TZ),
    (builtin(t.TIMESTAMPTZ), "CURRENT_TIMESTAMP", {}, EPOCH_TZ),
    (builtin(t.TIMESTAMP), "'2020-01-01 10:00:00'::timestamp without time zone", {}, 1577872800000000),
    (builtin(t.DATE), "CURRENT_DATE", {}, 0),
    (builtin(t.UUID), "gen_random_uuid()", {}, "00000000-0000-0000-0000-000000000000"),
    (builtin(t.INTERVAL), "'1 day'::interval", {}, 86_400_000_000),
    (builtin(t.NUMERIC, NUMERIC_6_2), "1.5", {}, decimal.Decimal("1.50")),
    (builtin(t.NUMERIC, NUMERIC_6_2), "1.5", {"decimal_handling_mode": "string"}, "1.50"),  # the column's scale
    (builtin(t.NUMERIC), "1.5", {}, NO_DEFAULT),  # a VariableScaleDecimal struct: Debezium drops it
    (builtin(t.INET), "'10.0.0.1'::inet", {}, NO_DEFAULT),  # no parser for the type
    (builtin(1007), "'{1,2}'::integer[]", {}, NO_DEFAULT),
    (ColumnType(90002, name="mood", kind="e", enum_labels=("sad", "happy")), "'happy'::mood", {}, "happy"),
])
def test_defaults_as_debezium_reads_them(column_type, expression, settings, expected):
    mapping = column_mapping(column_type, TypeSettings(**settings), True, "c")
    assert column_default(column_type, expression, mapping) == expected
