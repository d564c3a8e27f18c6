"""Server errors with MongoDB's own codes, code names and error labels.

A `CommandError` raised anywhere in a command handler becomes the `{ok: 0, errmsg, code, codeName}` reply
MongoDB sends; `WriteError` is collected per statement into `writeErrors`.
"""

from __future__ import annotations

CODE_NAMES = {
    1: "InternalError",
    10334: "BSONObjectTooLarge",
    2: "BadValue",
    4: "NoSuchKey",
    6: "HostUnreachable",
    9: "FailedToParse",
    11: "UserNotFound",
    14: "TypeMismatch",
    16: "IllegalOperation",
    20: "IllegalOperation",
    22: "InvalidBSON",
    26: "NamespaceNotFound",
    27: "IndexNotFound",
    28: "PathNotViable",
    40: "ConflictingUpdateOperators",
    43: "CursorNotFound",
    47: "NoMatchingDocument",
    48: "NamespaceExists",
    50: "MaxTimeMSExpired",
    52: "DollarPrefixedFieldName",
    59: "CommandNotFound",
    66: "ImmutableField",
    76: "NoReplicationEnabled",
    67: "CannotCreateIndex",
    72: "InvalidOptions",
    73: "InvalidNamespace",
    85: "IndexOptionsConflict",
    86: "IndexKeySpecsConflict",
    89: "NetworkTimeout",
    91: "ShutdownInProgress",
    93: "InvalidReplicaSetConfig",
    94: "NotYetInitialized",
    95: "NotSecondary",
    96: "OperationFailed",
    112: "WriteConflict",
    115: "CommandNotSupported",
    125: "CommandFailed",
    133: "FailedToSatisfyReadPreference",
    136: "CappedPositionLost",
    166: "CommandNotSupportedOnView",
    175: "QueryPlanKilled",
    189: "PrimarySteppedDown",
    197: "InvalidIndexSpecificationOption",
    224: "NoSuchSession",
    225: "TransactionTooOld",
    236: "CursorKilled",
    251: "NoSuchTransaction",
    256: "TransactionCommitted",
    257: "TransactionTooLarge",
    260: "InvalidResumeToken",
    262: "ExceededTimeLimit",
    263: "OperationNotSupportedInTransaction",
    267: "PreparedTransactionInProgress",
    280: "ChangeStreamFatalError",
    286: "ChangeStreamHistoryLost",
    9001: "SocketException",
    10107: "NotWritablePrimary",
    11000: "DuplicateKey",
    11600: "InterruptedAtShutdown",
    11601: "Interrupted",
    11602: "InterruptedDueToReplStateChange",
    13297: "DatabaseDifferCase",
    13435: "NotPrimaryNoSecondaryOk",
    13436: "NotPrimaryOrSecondary",
    14031: "OutOfDiskSpace",
    17280: "KeyTooLong",
    31254: "Location31254",
    40324: "Location40324",
    40415: "Location40415",
    40573: "Location40573",
}

# Errors after which the server itself adds "RetryableWriteError" to a retryable write's reply.
RETRYABLE_WRITE_CODES = {6, 7, 89, 91, 189, 262, 9001, 10107, 11600, 11602, 13435, 13436}
# Errors MongoDB labels "ResumableChangeStreamError" on change-stream getMore/aggregate.
RESUMABLE_CHANGE_STREAM_CODES = {
    6, 7, 89, 91, 133, 150, 189, 234, 262, 9001, 10107, 11600, 11602, 13388, 13435, 13436, 63, 43,
}


def code_name(code: int) -> str:
    return CODE_NAMES.get(code, f"Location{code}")


class CommandError(Exception):
    """A command failed as a whole: `{ok: 0, errmsg, code, codeName}` plus optional labels/extra fields."""

    def __init__(self, code: int, errmsg: str, labels: list[str] | None = None, extra: dict | None = None,
                 code_name_override: str | None = None):
        super().__init__(errmsg)
        self.code = code
        self.errmsg = errmsg
        self.labels = list(labels or [])
        self.extra = dict(extra or {})
        self.code_name = code_name_override or code_name(code)

    def to_reply(self) -> dict:
        reply: dict = {"ok": 0.0, "errmsg": self.errmsg, "code": self.code, "codeName": self.code_name}
        reply.update(self.extra)
        if self.labels:
            reply["errorLabels"] = list(self.labels)
        return reply


class WriteError(Exception):
    """One statement of a write command failed: becomes an entry of `writeErrors`."""

    def __init__(self, code: int, errmsg: str, extra: dict | None = None):
        super().__init__(errmsg)
        self.code = code
        self.errmsg = errmsg
        self.extra = dict(extra or {})

    def to_entry(self, index: int) -> dict:
        entry = {"index": index, "code": self.code}
        entry.update(self.extra)
        entry["errmsg"] = self.errmsg
        return entry

    def as_command_error(self) -> CommandError:
        return CommandError(self.code, self.errmsg, extra=self.extra)


def bad_value(msg: str) -> CommandError:
    return CommandError(2, msg)


def type_mismatch(msg: str) -> CommandError:
    return CommandError(14, msg)


def failed_to_parse(msg: str) -> CommandError:
    return CommandError(9, msg)


def not_writable_primary() -> CommandError:
    return CommandError(10107, "not primary")


def namespace_not_found(msg: str = "ns not found") -> CommandError:
    return CommandError(26, msg)
