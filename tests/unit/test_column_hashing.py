"""column.mask.hash.* of the relational sources: Debezium's v1 (Java-serialized String) and v2 (UTF-8) salted
hashes checked byte for byte against the JDK's own ObjectOutputStream and MessageDigest, the property's parsing by
both sources (unknown algorithm refused, the salt never shown), and the precedence of mask, hash and truncation."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from connectors.config.types import ConfigError
from connectors.core import hashing
from connectors.core.columns import ColumnHash, ColumnRules, hash_rule, shown_hash_property
from connectors.mysql.config import MySqlConfig
from connectors.postgres.config import PostgresConfig, validate
from connectors.secrets import MASK, Secret

SALT = "pepper-ß"
PG = {"name": "x", "topic.prefix": "x", "database.hostname": "h", "database.user": "u", "database.dbname": "d"}
MYSQL = {"name": "m1", "database.hostname": "db", "database.user": "cdc", "database.password": "s3cret",
         "database.server.id": "5400", "topic.prefix": "m1"}
VALUES = ["abc", "", "café naïve", "nul\x00inside", "emoji 😀 and 𝄞", "x" * 70_000, "é" * 40_000]

# What Debezium's MaskStrings does, written against the JDK: v1 hashes ObjectOutputStream.writeObject(value)'s bytes,
# v2 the value's UTF-8 bytes, each after the salt's bytes. Values come as hex of their UTF-8 on stdin, one a line
# (a NUL cannot be an argument; a 70,000-character one is too long for one).
JAVA_ORACLE = """
import java.io.*;
import java.nio.charset.StandardCharsets;
import java.security.MessageDigest;
import java.util.HexFormat;

public class Hash {
    public static void main(String[] args) throws Exception {
        MessageDigest digest = MessageDigest.getInstance(args[0]);
        byte[] salt = args[1].getBytes(StandardCharsets.UTF_8);
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.US_ASCII));
        for (String line; (line = in.readLine()) != null; ) {
            String value = new String(HexFormat.of().parseHex(line.trim()), StandardCharsets.UTF_8);
            ByteArrayOutputStream bytes = new ByteArrayOutputStream();
            ObjectOutputStream out = new ObjectOutputStream(bytes);
            out.writeObject(value);
            out.flush();
            digest.reset();
            digest.update(salt);
            String v1 = HexFormat.of().formatHex(digest.digest(bytes.toByteArray()));
            digest.reset();
            digest.update(salt);
            String v2 = HexFormat.of().formatHex(digest.digest(value.getBytes(StandardCharsets.UTF_8)));
            System.out.println(v1 + " " + v2);
        }
    }
}
"""


@pytest.mark.skipif(shutil.which("java") is None, reason="no java on this machine (every Kafka machine has one)")
@pytest.mark.parametrize("algorithm", ["SHA-256", "MD5", "SHA3-512"])
def test_hashes_are_the_jdks_byte_for_byte(tmp_path, algorithm):
    source = tmp_path / "Hash.java"
    source.write_text(JAVA_ORACLE)
    stdin = "".join(value.encode("utf-8").hex() + "\n" for value in VALUES)
    done = subprocess.run(["java", str(source), algorithm, SALT], input=stdin, capture_output=True, text=True,
                          timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    java = [tuple(line.split()) for line in done.stdout.splitlines()]
    v1, v2 = hashing.string_hasher(algorithm, SALT, 1), hashing.string_hasher(algorithm, SALT, 2)
    assert [(v1(value), v2(value)) for value in VALUES] == java


def test_v1_bytes_are_javas_serialized_string():
    assert hashing.java_serialized("") == b"\xac\xed\x00\x05\x74\x00\x00"
    assert hashing.java_serialized("a\x00😀") == (b"\xac\xed\x00\x05\x74\x00\x09" + b"a\xc0\x80"
                                                   + b"\xed\xa0\xbd\xed\xb8\x80")
    long = hashing.java_serialized("x" * 65_536)
    assert long[:13] == b"\xac\xed\x00\x05\x7c" + (65_536).to_bytes(8, "big") and len(long) == 13 + 65_536
    assert hashing.java_serialized("x" * 65_535)[4:7] == b"\x74\xff\xff"


def test_java_algorithm_names():
    assert hashing.digest_name("sha-256") == "sha256" and hashing.digest_name("SHA3-256") == "sha3_256"
    assert hashing.digest_name("MD5") == "md5" and hashing.digest_name("SHA-512/256") == "sha512_256"
    assert hashing.digest_name("SHA-257") is None and hashing.digest_name("blake2b") is None


def test_v1_and_v2_properties_parse_with_the_salt_a_secret():
    v1 = hash_rule("column.mask.hash.SHA-256.with.salt.a.b,c", (r"s\.t\.c",))
    v2 = hash_rule("column.mask.hash.v2.MD5.with.salt.x", (r"s\.t\..*", "x"))
    assert (v1.algorithm, v1.version, v1.salt.reveal(), v1.columns) == ("SHA-256", 1, "a.b,c", (r"s\.t\.c",))
    assert (v2.algorithm, v2.version, v2.salt.reveal()) == ("MD5", 2, "x")
    assert "a.b,c" not in repr(v1) and v1.property_name() == f"column.mask.hash.SHA-256.with.salt.{MASK}"
    assert v2.property_name(redact=False) == "column.mask.hash.v2.MD5.with.salt.x"
    assert shown_hash_property("column.mask.hash.v2.MD5.with.salt.x") == f"column.mask.hash.v2.MD5.with.salt.{MASK}"
    with pytest.raises(ValueError, match="unknown hash algorithm 'SHA-257'"):
        hash_rule("column.mask.hash.SHA-257.with.salt.x", ("a",))
    with pytest.raises(ValueError, match="expected column.mask.hash"):
        hash_rule("column.mask.hash.SHA-256.salt.x", ("a",))


@pytest.mark.parametrize(("prop", "shown", "message"), [
    ("column.mask.hash.SHA-257.with.salt.topsecret", f"column.mask.hash.SHA-257.with.salt.{MASK}", "unknown hash"),
    ("column.mask.hash.v2.FOO.with.salt.topsecret", f"column.mask.hash.v2.FOO.with.salt.{MASK}", "unknown hash"),
    ("column.mask.hash.SHA-256.topsecret", f"column.mask.hash.{MASK}", "expected column.mask.hash"),
    ("column.mask.hash.SHA-256.with.salt.topsecret", f"column.mask.hash.SHA-256.with.salt.{MASK}", "regular exp"),
])
def test_both_sources_refuse_a_bad_hash_property_naming_it_without_the_salt(prop, shown, message):
    raw = "a.b.(" if message == "regular exp" else "a.b.c"
    pg = {p.property: p.message for p in validate({**PG, prop: raw})}
    with pytest.raises(ConfigError) as caught:
        MySqlConfig.from_properties({**MYSQL, prop: raw})
    mysql = {p.property: p.message for p in caught.value.problems}
    for problems in (pg, mysql):
        assert list(problems) == [shown], problems
        assert message in problems[shown] and "topsecret" not in problems[shown]


def test_both_sources_take_hashes_and_never_show_the_salt():
    props = {"column.mask.hash.SHA-256.with.salt.topsecret": r"public\.t\.a", "column.mask.hash.v2.MD5.with.salt.s2":
             r"public\.t\.b,public\.u\..*"}
    pg = PostgresConfig.from_properties({**PG, **props})
    mysql = MySqlConfig.from_properties({**MYSQL, **props})
    for config in (pg, mysql):
        rules = config.column_rules
        assert rules.hash_for("public.t.a").salt.reveal() == "topsecret" and rules.hash_for("PUBLIC.T.B").version == 2
        assert rules.hash_for("public.t.c") is None and rules.hash_for("public.u.z").algorithm == "MD5"
        assert "topsecret" not in repr(config) and "topsecret" not in str(config)
    assert pg.redacted()[f"column.mask.hash.SHA-256.with.salt.{MASK}"] == r"public\.t\.a"
    assert "topsecret" not in repr(pg.redacted())


def same(value):
    return value


def test_a_column_gets_the_rule_that_hides_most_mask_then_hash_then_truncation():
    hashed = ColumnHash("SHA-256", Secret("s"), 2, (r"s\.t\.(h|m|both)",))
    first = ColumnHash("MD5", Secret("s"), 1, (r"s\.t\.h",))  # v1 rules before v2, as Debezium registers them
    rules = ColumnRules(masks={r"s\.t\.(m|both)": 2}, truncates={r"s\.t\..*": 3}, hashes=(hashed, first))
    full = hashing.string_hasher("MD5", "s", 1)("value")
    assert rules.string_converter("s.t.h", same, character=True)("value") == full
    assert rules.string_converter("s.t.h", same, character=True, length=10)("value") == full[:10]
    assert rules.string_converter("s.t.m", same, character=True)("value") == "**"
    assert rules.string_converter("s.t.both", same, character=True)("value") == "**"
    assert rules.string_converter("s.t.h", same, character=False)("value") == "val"  # not a character column
    assert rules.string_converter("s.t.other", same, character=True)("value") == "val"
    assert rules.string_converter("s.t.h", same, character=True)(None) is None


def test_mysql_declared_lengths_come_from_bytes_and_the_character_set():
    from pymysqlreplication.constants import FIELD_TYPE

    from connectors.mysql.binlog import ColumnInfo
    from connectors.mysql.types import declared_length, is_character

    def column(code=FIELD_TYPE.VARCHAR, **kwargs):
        return ColumnInfo("c", code, True, **kwargs)

    assert declared_length(column(max_length=40, charset="utf8", collation="utf8mb4_general_ci")) == 10  # binlog
    assert declared_length(column(max_length=40, charset="utf8mb4", collation="utf8mb4_uca1400_ai_ci")) == 10
    assert declared_length(column(max_length=30, charset="utf8", collation="utf8_general_ci")) == 10  # MySQL 5.7
    assert declared_length(column(FIELD_TYPE.STRING, max_length=8, charset="cp1252",
                                  collation="latin1_swedish_ci")) == 8
    assert declared_length(column(max_length=40, charset="utf8")) == 10  # a collation the binlog reader does not know
    assert declared_length(column(FIELD_TYPE.BLOB, charset="utf8mb4", length_size=2)) is None  # TEXT
    assert is_character(column(charset="utf8mb4")) and not is_character(column(charset="binary"))
    assert not is_character(column(FIELD_TYPE.ENUM, charset="utf8mb4"))
