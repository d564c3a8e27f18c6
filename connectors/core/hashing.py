"""Debezium's salted hashes of string values: `hex(digest(salt + bytes of the value))`, lowercase.

The relational sources' `column.mask.hash.*` (Debezium's `MaskStrings`) hash a string in one of two byte forms:
v1 (`column.mask.hash.<algorithm>.with.salt.<salt>`) the bytes Java's `ObjectOutputStream.writeObject(String)`
writes, v2 (`column.mask.hash.v2.…`) the string's UTF-8 bytes. Algorithms are named as Java's `MessageDigest`.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable

# Java's standard MessageDigest names (case-insensitive there too) that hashlib computes
JAVA_DIGESTS = {
    "MD5": "md5", "SHA-1": "sha1", "SHA1": "sha1", "SHA": "sha1", "SHA-224": "sha224", "SHA-256": "sha256",
    "SHA-384": "sha384", "SHA-512": "sha512", "SHA-512/224": "sha512_224", "SHA-512/256": "sha512_256",
    "SHA3-224": "sha3_224", "SHA3-256": "sha3_256", "SHA3-384": "sha3_384", "SHA3-512": "sha3_512",
}
HASH_VERSIONS = (1, 2)

# ObjectOutputStream: STREAM_MAGIC, STREAM_VERSION, then TC_STRING (2-byte length) or TC_LONGSTRING (8-byte length)
_STREAM_HEADER = b"\xac\xed\x00\x05"
_TC_STRING, _TC_LONGSTRING = b"\x74", b"\x7c"
_OUTSIDE_BMP = re.compile("[\U00010000-\U0010ffff]")


def digest_name(java_name: str) -> str | None:
    """The hashlib name of a Java MessageDigest algorithm; None when hashlib has no such digest."""
    name = JAVA_DIGESTS.get(java_name.strip().upper())
    return name if name is not None and name in hashlib.algorithms_available else None


def salted_hex(algorithm: str, salt: bytes, data: bytes) -> str:
    """`algorithm` is a hashlib name."""
    digest = hashlib.new(algorithm)
    digest.update(salt)
    digest.update(data)
    return digest.hexdigest()


def _surrogate_pair(match: re.Match[str]) -> str:
    code = ord(match.group()) - 0x10000
    return chr(0xD800 + (code >> 10)) + chr(0xDC00 + (code & 0x3FF))


def modified_utf8(text: str) -> bytes:
    """Java's modified UTF-8 (DataOutput.writeUTF): NUL as C0 80, a character outside the BMP as its two UTF-16
    surrogates, each encoded as a 3-byte sequence."""
    split = _OUTSIDE_BMP.sub(_surrogate_pair, text)
    return split.encode("utf-8", "surrogatepass").replace(b"\x00", b"\xc0\x80")


def java_serialized(text: str) -> bytes:
    """What a new ObjectOutputStream holds after `writeObject(text)`."""
    body = modified_utf8(text)
    if len(body) <= 0xFFFF:
        return _STREAM_HEADER + _TC_STRING + len(body).to_bytes(2, "big") + body
    return _STREAM_HEADER + _TC_LONGSTRING + len(body).to_bytes(8, "big") + body


def string_hasher(java_algorithm: str, salt: str, version: int) -> Callable[[str], str]:
    """The hex hash of a string as Debezium's column.mask.hash (v1 or v2) computes it; the salt's bytes are UTF-8."""
    algorithm = digest_name(java_algorithm)
    if algorithm is None:
        raise ValueError(f"unknown hash algorithm {java_algorithm!r}")
    if version not in HASH_VERSIONS:
        raise ValueError(f"unknown hashing version {version!r}")
    salt_bytes = salt.encode("utf-8")
    to_bytes = java_serialized if version == 1 else (lambda text: text.encode("utf-8", "surrogatepass"))
    return lambda text: salted_hex(algorithm, salt_bytes, to_bytes(text))
