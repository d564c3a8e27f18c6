"""Strings that are not valid UTF-8, decoded as the MongoDB Java driver (and so Debezium) decodes them.

MongoDB stores string bytes as clients send them, valid UTF-8 or not. The Java driver reads a BSON string with
`new String(bytes, UTF_8)`, which replaces each malformed sequence with U+FFFD; where a sequence ends differs from
Python's "replace" handler (a UTF-8-encoded surrogate such as ED A0 80 is one malformed sequence for Java, three for
Python; a truncated sequence at the end of the string is one). Registering the codec error handler JAVA_REPLACE
makes Python decode such strings to the text the Java driver makes of them; `bson.decode` uses it through
`CodecOptions(unicode_decode_error_handler=JAVA_REPLACE)`.
"""

from __future__ import annotations

import codecs

JAVA_REPLACE = "cdc-java-replace"
REPLACEMENT = "\ufffd"


def _continuation(byte: int) -> bool:
    return byte & 0xC0 == 0x80


def _malformed_length(data: bytes, at: int) -> int:
    """How many bytes from `at` (where Python found a malformed sequence) Java's decoder replaces with one U+FFFD."""
    size, first = len(data), data[at]
    following = data[at + 1:at + 4]
    if 0xC2 <= first <= 0xDF:
        return 1  # a lead byte without its continuation (or at the end)
    if 0xE0 <= first <= 0xEF:
        overlong = first == 0xE0 and len(following) >= 1 and following[0] & 0xE0 == 0x80
        if len(following) >= 2:
            second, third = following[0], following[1]
            if overlong or not _continuation(second):
                return 1
            if not _continuation(third):
                return 2
            return 3  # well formed but a surrogate (ED A0..BF xx): one malformed sequence
        if len(following) == 1 and (overlong or not _continuation(following[0])):
            return 1
        return size - at  # truncated at the end of the string
    if 0xF0 <= first <= 0xF7:
        if len(following) >= 3:
            second, third = following[0], following[1]
            if (first > 0xF4 or (first == 0xF0 and not 0x90 <= second <= 0xBF)
                    or (first == 0xF4 and second & 0xF0 != 0x80) or not _continuation(second)):
                return 1
            return 2 if not _continuation(third) else 3
        if first > 0xF4 or (len(following) >= 1 and (
                (first == 0xF0 and not 0x90 <= following[0] <= 0xBF)
                or (first == 0xF4 and following[0] & 0xF0 != 0x80) or not _continuation(following[0]))):
            return 1
        if len(following) >= 2 and not _continuation(following[1]):
            return 2
        return size - at
    return 1  # a continuation byte without a lead, C0, C1, F8..FF


def _java_replace(error: UnicodeError) -> tuple[str, int]:
    if not isinstance(error, UnicodeDecodeError):
        raise error
    return REPLACEMENT, error.start + _malformed_length(error.object, error.start)


codecs.register_error(JAVA_REPLACE, _java_replace)


def java_decode(data: bytes) -> str:
    return data.decode("utf-8", JAVA_REPLACE)
