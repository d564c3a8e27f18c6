"""Resume tokens: opaque hex strings whose lexical order is the order of change events.

Layout of `_data` (upper-case hex, fixed-width prefix so plain string comparison orders tokens):
`82` | clusterTime seconds (8) | increment (8) | `2B` | token type (2: `00` high-water mark, `80` event) |
txnOpIndex (8) | fromInvalidate (2) | collection UUID (32 or empty) | document key (hex BSON, optional).
"""

from __future__ import annotations

from dataclasses import dataclass

from bson.timestamp import Timestamp

from devstack.mongo.errors import CommandError

HWM = 0x00
EVENT = 0x80
_PREFIX_LEN = 2 + 16 + 2 + 2 + 8 + 2


@dataclass(frozen=True)
class TokenData:
    time: int
    inc: int
    kind: int = EVENT
    txn_op_index: int = 0
    from_invalidate: bool = False
    uuid_hex: str = ""
    key_hex: str = ""

    @property
    def ts(self) -> Timestamp:
        return Timestamp(self.time, self.inc)

    def sort_key(self) -> tuple:
        return (self.time, self.inc, self.kind, self.txn_op_index, int(self.from_invalidate))

    def encode(self) -> dict:
        data = (f"82{self.time:08X}{self.inc:08X}2B{self.kind:02X}{self.txn_op_index:08X}"
                f"{int(self.from_invalidate):02X}{self.uuid_hex}{self.key_hex}")
        return {"_data": data}


def event_sort_key(ts: Timestamp, txn_op_index: int = 0, from_invalidate: bool = False) -> tuple:
    return (ts.time, ts.inc, EVENT, txn_op_index, int(from_invalidate))


def make_event_token(ts: Timestamp, txn_op_index: int = 0, from_invalidate: bool = False, uuid=None,
                     document_key=None) -> dict:
    """An event's token. Position fields decide the order; the collection UUID only makes it recognisable."""
    if uuid is None:
        uuid_hex = ""
    else:
        uuid_hex = _UUID_HEX.get(uuid)
        if uuid_hex is None:
            uuid_hex = _UUID_HEX[uuid] = bytes(uuid).hex().upper()
    data = f"82{ts.time:08X}{ts.inc:08X}2B80{txn_op_index:08X}{'01' if from_invalidate else '00'}{uuid_hex}"
    return {"_data": data}


_UUID_HEX: dict = {}


def make_hwm_token(ts: Timestamp) -> dict:
    return {"_data": f"82{ts.time:08X}{ts.inc:08X}2B{HWM:02X}{0:08X}00"}


def decode_token(token) -> TokenData:
    if not isinstance(token, dict):
        raise CommandError(14, "resume token must be an object")
    data = token.get("_data")
    if not isinstance(data, str):
        raise CommandError(40647, "Bad resume token: _data of missing or of wrong type. Expected string, got "
                                  f"{token!r}", code_name_override="Location40647")
    try:
        if len(data) < _PREFIX_LEN or not data.startswith("82"):
            raise ValueError
        time = int(data[2:10], 16)
        inc = int(data[10:18], 16)
        kind = int(data[20:22], 16)
        txn_op_index = int(data[22:30], 16)
        from_invalidate = data[30:32] == "01"
        rest = data[32:]
        uuid_hex = rest[:32] if kind == EVENT and len(rest) >= 32 else ""
        key_hex = rest[32:] if uuid_hex else rest
        int(data, 16)
    except ValueError:
        raise CommandError(260, "Invalid resume token: could not decode the resume token _data field "
                                f"{data!r}") from None
    return TokenData(time, inc, kind, txn_op_index, from_invalidate, uuid_hex, key_hex)


def token_key(token: dict) -> tuple:
    return decode_token(token).sort_key()
