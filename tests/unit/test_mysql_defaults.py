"""Column defaults in MariaDB's Connect schemas, type by type: information_schema's COLUMN_DEFAULT in, the field schema
out. Each expected field schema is the one Debezium's MariaDB connector 3.5.0.Final wrote through JsonConverter for
the same column and DEFAULT clause (`python -m bench.compat --source mariadb`, tables `defaults` and
`more_defaults`); the COLUMN_DEFAULT texts are those MariaDB 10.11 showed for them."""

from __future__ import annotations

import datetime

import pytest
from pymysqlreplication.constants import FIELD_TYPE as F

from connectors.events import json_converter
from connectors.mysql.binlog import ZERO_DATE, ColumnInfo
from connectors.mysql.defaults import default_expression
from connectors.mysql.types import TypeOptions, mapping


def col(name, type_code, default, nullable=True, **kw):
    return ColumnInfo(name=name, type_code=type_code, nullable=nullable, default=default, **kw)


def field_json(column: ColumnInfo, options: TypeOptions = TypeOptions()) -> str:
    """The field schema as JsonConverter writes it inside a struct."""
    return json_converter.schema_json(mapping(column, options).schema.as_schema())[:-1] + f',"field":"{column.name}"}}'


UTF8 = {"charset": "utf8", "collation": "utf8mb4_general_ci"}

# (column with its COLUMN_DEFAULT, Debezium's field schema)
DEBEZIUMS = [
    (col("id", F.LONGLONG, "7", nullable=False), '{"type":"int64","optional":false,"default":7,"field":"id"}'),
    (col("d_int", F.LONG, "42", nullable=False), '{"type":"int32","optional":false,"default":42,"field":"d_int"}'),
    (col("d_small", F.SHORT, "-3"), '{"type":"int16","optional":true,"default":-3,"field":"d_small"}'),
    (col("d_tiny", F.TINY, "-128"), '{"type":"int16","optional":true,"default":-128,"field":"d_tiny"}'),
    (col("d_medium", F.INT24, "16777215", unsigned=True),
     '{"type":"int32","optional":true,"default":16777215,"field":"d_medium"}'),
    (col("d_big", F.LONGLONG, "9000000000"), '{"type":"int64","optional":true,"default":9000000000,"field":"d_big"}'),
    (col("d_uint", F.LONG, "4000000000", unsigned=True),
     '{"type":"int64","optional":true,"default":4000000000,"field":"d_uint"}'),
    (col("d_ubig", F.LONGLONG, "5", unsigned=True), '{"type":"int64","optional":true,"default":5,"field":"d_ubig"}'),
    # BOOLEAN DEFAULT TRUE: information_schema shows 1
    (col("d_bool", F.TINY, "1", nullable=False), '{"type":"int16","optional":false,"default":1,"field":"d_bool"}'),
    (col("d_bit", F.BIT, "b'1'", bits=1), '{"type":"boolean","optional":true,"default":true,"field":"d_bit"}'),
    (col("d_bit0", F.BIT, "b'0'", nullable=False, bits=1),
     '{"type":"boolean","optional":false,"default":false,"field":"d_bit0"}'),
    (col("d_bits", F.BIT, "b'1000000001'", bits=10),
     '{"type":"bytes","optional":true,"name":"io.debezium.data.Bits","version":1,"parameters":{"length":"10"},'
     '"default":"AQI=","field":"d_bits"}'),
    (col("d_bits_short", F.BIT, "b'1'", bits=10),
     '{"type":"bytes","optional":true,"name":"io.debezium.data.Bits","version":1,"parameters":{"length":"10"},'
     '"default":"AQA=","field":"d_bits_short"}'),
    (col("d_bits_zero", F.BIT, "b'0'", bits=12),
     '{"type":"bytes","optional":true,"name":"io.debezium.data.Bits","version":1,"parameters":{"length":"12"},'
     '"default":"AAA=","field":"d_bits_zero"}'),
    # a string's inner quotes stay doubled, as Debezium's parser leaves them
    (col("d_text", F.VARCHAR, "'x''y'", max_length=32, **UTF8),
     '{"type":"string","optional":true,"default":"x\'\'y","field":"d_text"}'),
    (col("d_char", F.STRING, "'ab'", max_length=8, **UTF8),
     '{"type":"string","optional":true,"default":"ab","field":"d_char"}'),
    (col("d_empty", F.VARCHAR, "''", max_length=20, **UTF8),
     '{"type":"string","optional":true,"default":"","field":"d_empty"}'),
    (col("d_tx", F.BLOB, "'tx'", length_size=2, **UTF8),
     '{"type":"string","optional":true,"default":"tx","field":"d_tx"}'),
    (col("d_latin", F.VARCHAR, "'é'", max_length=5, charset="latin1", collation="latin1_swedish_ci"),
     '{"type":"string","optional":true,"default":"é","field":"d_latin"}'),
    (col("d_bin", F.VARCHAR, "'ab'", max_length=4, charset="binary"),
     '{"type":"bytes","optional":true,"default":"YWI=","field":"d_bin"}'),
    (col("d_blob", F.BLOB, "'bl'", length_size=2, charset="binary"),
     '{"type":"bytes","optional":true,"default":"Ymw=","field":"d_blob"}'),
    # BINARY(3) DEFAULT 'ab': the server shows its padding as the escape `\0`, which Debezium keeps as two characters
    (col("d_bn", F.STRING, "'ab\\0'", max_length=3, charset="binary"),
     '{"type":"bytes","optional":true,"default":"YWJcMA==","field":"d_bn"}'),
    (col("d_float", F.FLOAT, "1.5"), '{"type":"float","optional":true,"default":1.5,"field":"d_float"}'),
    (col("d_fl", F.FLOAT, "1.1"), '{"type":"float","optional":true,"default":1.1,"field":"d_fl"}'),
    (col("d_double", F.DOUBLE, "-2.25"), '{"type":"double","optional":true,"default":-2.25,"field":"d_double"}'),
    (col("d_exp", F.DOUBLE, "1e300"), '{"type":"double","optional":true,"default":1.0E300,"field":"d_exp"}'),
    (col("d_decimal", F.NEWDECIMAL, "3.14", precision=6, scale=2),
     '{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
     '"parameters":{"scale":"2","connect.decimal.precision":"6"},"default":"ATo=","field":"d_decimal"}'),
    (col("d_dec_neg", F.NEWDECIMAL, "-0.5", precision=5, scale=1),
     '{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
     '"parameters":{"scale":"1","connect.decimal.precision":"5"},"default":"+w==","field":"d_dec_neg"}'),
    (col("d_dec_int", F.NEWDECIMAL, "12", precision=10, scale=0),
     '{"type":"bytes","optional":true,"name":"org.apache.kafka.connect.data.Decimal","version":1,'
     '"parameters":{"scale":"0","connect.decimal.precision":"10"},"default":"DA==","field":"d_dec_int"}'),
    (col("d_date", F.DATE, "'2020-02-29'"),
     '{"type":"int32","optional":true,"name":"io.debezium.time.Date","version":1,"default":18321,"field":"d_date"}'),
    (col("d_zero", F.DATE, "'0000-00-00'", nullable=False),
     '{"type":"int32","optional":false,"name":"io.debezium.time.Date","version":1,"default":0,"field":"d_zero"}'),
    (col("d_zero_null", F.DATE, "'0000-00-00'"),
     '{"type":"int32","optional":true,"name":"io.debezium.time.Date","version":1,"field":"d_zero_null"}'),
    (col("d_dt", F.DATETIME2, "'2020-01-01 10:00:00.500'", fsp=3),
     '{"type":"int64","optional":true,"name":"io.debezium.time.Timestamp","version":1,"default":1577872800500,'
     '"field":"d_dt"}'),
    (col("d_dt6", F.DATETIME2, "'2020-01-01 10:00:00.000001'", fsp=6),
     '{"type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1,'
     '"default":1577872800000001,"field":"d_dt6"}'),
    (col("d_dt_frac", F.DATETIME2, "'2020-01-01 10:00:00.500000'", fsp=6),
     '{"type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1,'
     '"default":1577872800500000,"field":"d_dt_frac"}'),
    (col("d_zero_dt", F.DATETIME2, "'0000-00-00 00:00:00'", nullable=False, fsp=0),
     '{"type":"int64","optional":false,"name":"io.debezium.time.Timestamp","version":1,"default":0,'
     '"field":"d_zero_dt"}'),
    (col("d_zero_dt_null", F.DATETIME2, "'0000-00-00 00:00:00.000'", fsp=3),
     '{"type":"int64","optional":true,"name":"io.debezium.time.Timestamp","version":1,"field":"d_zero_dt_null"}'),
    # CURRENT_TIMESTAMP: the epoch, on DATETIME whether or not the column is nullable
    (col("d_now", F.DATETIME2, "current_timestamp()", fsp=0),
     '{"type":"int64","optional":true,"name":"io.debezium.time.Timestamp","version":1,"default":0,"field":"d_now"}'),
    (col("d_dt_now6", F.DATETIME2, "current_timestamp(6)", fsp=6),
     '{"type":"int64","optional":true,"name":"io.debezium.time.MicroTimestamp","version":1,"default":0,'
     '"field":"d_dt_now6"}'),
    (col("d_dt_now_nn", F.DATETIME2, "current_timestamp()", nullable=False, fsp=0),
     '{"type":"int64","optional":false,"name":"io.debezium.time.Timestamp","version":1,"default":0,'
     '"field":"d_dt_now_nn"}'),
    (col("d_ts", F.TIMESTAMP2, "'2020-01-01 10:00:00'", fsp=0),
     '{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1,'
     '"default":"2020-01-01T10:00:00Z","field":"d_ts"}'),
    (col("d_ts6", F.TIMESTAMP2, "'2020-01-01 10:00:00.123456'", fsp=6),
     '{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1,'
     '"default":"2020-01-01T10:00:00.123456Z","field":"d_ts6"}'),
    # the column's fsp digits, as a streamed value has them
    (col("d_ts3", F.TIMESTAMP2, "'2020-01-01 10:00:00.500'", fsp=3),
     '{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1,'
     '"default":"2020-01-01T10:00:00.500Z","field":"d_ts3"}'),
    # on TIMESTAMP the epoch (so CURRENT_TIMESTAMP) is the zero value: none when nullable, else the epoch
    (col("d_zero_ts", F.TIMESTAMP2, "'0000-00-00 00:00:00'", nullable=False, fsp=0),
     '{"type":"string","optional":false,"name":"io.debezium.time.ZonedTimestamp","version":1,'
     '"default":"1970-01-01T00:00:00Z","field":"d_zero_ts"}'),
    (col("d_ts_now", F.TIMESTAMP2, "current_timestamp()", nullable=False, fsp=0),
     '{"type":"string","optional":false,"name":"io.debezium.time.ZonedTimestamp","version":1,'
     '"default":"1970-01-01T00:00:00Z","field":"d_ts_now"}'),
    (col("d_ts_now_null", F.TIMESTAMP2, "current_timestamp()", fsp=0),
     '{"type":"string","optional":true,"name":"io.debezium.time.ZonedTimestamp","version":1,"field":"d_ts_now_null"}'),
    (col("d_time", F.TIME2, "'12:34:56'", fsp=0),
     '{"type":"int64","optional":true,"name":"io.debezium.time.MicroTime","version":1,"default":45296000000,'
     '"field":"d_time"}'),
    (col("d_time_neg", F.TIME2, "'-01:02:03.500'", fsp=3),
     '{"type":"int64","optional":true,"name":"io.debezium.time.MicroTime","version":1,"default":-3723500000,'
     '"field":"d_time_neg"}'),
    (col("d_year", F.YEAR, "2020"),
     '{"type":"int32","optional":true,"name":"io.debezium.time.Year","version":1,"default":2020,"field":"d_year"}'),
    (col("d_enum", F.ENUM, "'b'", enum_values=("a", "b")),
     '{"type":"string","optional":true,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"a,b"},'
     '"default":"b","field":"d_enum"}'),
    (col("d_set", F.SET, "'a,b'", set_values=("a", "b")),
     '{"type":"string","optional":true,"name":"io.debezium.data.EnumSet","version":1,"parameters":{"allowed":"a,b"},'
     '"default":"a,b","field":"d_set"}'),
    (col("d_set_empty", F.SET, "''", set_values=("a", "b")),
     '{"type":"string","optional":true,"name":"io.debezium.data.EnumSet","version":1,"parameters":{"allowed":"a,b"},'
     '"default":"","field":"d_set_empty"}'),
    # expressions, NULL, and NOT NULL columns without DEFAULT: no default
    (col("d_expr", F.LONG, "(1 + 1)"), '{"type":"int32","optional":true,"field":"d_expr"}'),
    (col("d_str_expr", F.VARCHAR, "concat('a','b')", max_length=40, **UTF8),
     '{"type":"string","optional":true,"field":"d_str_expr"}'),
    (col("d_null", F.LONG, "NULL"), '{"type":"int32","optional":true,"field":"d_null"}'),
    (col("d_int_nn", F.LONG, None, nullable=False), '{"type":"int32","optional":false,"field":"d_int_nn"}'),
    (col("d_enum_nn", F.ENUM, None, nullable=False, enum_values=("p", "q")),
     '{"type":"string","optional":false,"name":"io.debezium.data.Enum","version":1,"parameters":{"allowed":"p,q"},'
     '"field":"d_enum_nn"}'),
]


@pytest.mark.parametrize("column, debeziums", DEBEZIUMS, ids=[c.name for c, _ in DEBEZIUMS])
def test_a_columns_default_is_in_its_field_schema_as_debezium_writes_it(column, debeziums):
    assert field_json(column) == debeziums


def test_the_default_follows_the_columns_converter_settings():
    decimal_column = col("d", F.NEWDECIMAL, "3.14", precision=6, scale=2)
    assert field_json(decimal_column, TypeOptions(decimal_handling_mode="string")) == \
        '{"type":"string","optional":true,"default":"3.14","field":"d"}'
    assert field_json(decimal_column, TypeOptions(decimal_handling_mode="double")) == \
        '{"type":"double","optional":true,"default":3.14,"field":"d"}'
    date_column = col("d", F.DATE, "'2020-02-29'")
    assert '"default":18321' in field_json(date_column, TypeOptions(time_precision_mode="connect"))


def test_a_not_null_zero_date_is_written_as_the_columns_default():
    """Debezium reads a zero date as null, and a NOT NULL column's null as its default (the epoch without one);
    TIMESTAMP's zero from the binlog is the epoch itself, which it keeps, where a snapshot's SELECT reads null."""
    date = mapping(col("dn", F.DATE, "'2000-01-01'", nullable=False))
    assert date.value(ZERO_DATE) == 10957
    assert mapping(col("dn", F.DATE, None, nullable=False)).value(ZERO_DATE) == 0
    assert mapping(col("dn", F.DATE, "'2000-01-01'")).value(ZERO_DATE) is None
    datetime_ = mapping(col("dtz", F.DATETIME2, "'2000-01-01 00:00:00'", nullable=False, fsp=0))
    assert datetime_.value(ZERO_DATE) == 946684800000
    timestamp = mapping(col("tsz", F.TIMESTAMP2, "'2000-01-01 00:00:00'", nullable=False, fsp=0))
    assert timestamp.value(ZERO_DATE) == "2000-01-01T00:00:00Z"  # read by SELECT
    assert timestamp.value(datetime.datetime(1970, 1, 1)) == "1970-01-01T00:00:00Z"  # streamed


@pytest.mark.parametrize("column_default, kept", [
    (None, None), ("NULL", None), ("'x''y'", "x''y"), ("_utf8mb4'ab'", "ab"), ("b'101'", "101"), ("-0.5", "-0.5"),
    ("1e300", "1e300"), ("current_timestamp()", "1970-01-01 00:00:00"), ("current_timestamp(6)", "1970-01-01 00:00:00"),
    ("(1 + 1)", None), ("concat('a','b')", None), ("'a','b'", None), ("curdate()", None),
])
def test_the_text_kept_of_a_default_clause_is_debeziums_parsers(column_default, kept):
    assert default_expression(column_default) == kept
