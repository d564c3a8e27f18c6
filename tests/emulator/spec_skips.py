"""Spec tests the emulator does not run, each with its reason (mirrored in docs/emulator.md)."""

from __future__ import annotations

# (file stem, test description) -> reason; "*" as description skips a whole file
_PYMONGO_BYPASS = ("pymongo sends bypassDocumentValidation only when true; the test expects `false` on the wire "
                   "(driver behaviour, not server behaviour)")
_TWO_MONGOSES = ("retries commitTransaction on a second mongos, which finds the transaction by its recoveryToken; "
                 "the emulated cluster has one mongos")
SKIPS: dict[tuple[str, str], str] = {
    ("mongos-recovery-token-errorLabels", "commitTransaction retry succeeds on new mongos"): _TWO_MONGOSES,
    ("mongos-recovery-token", "commitTransaction retry fails on new mongos"): _TWO_MONGOSES,
    ("bypassDocumentValidation", "Aggregate with $out passes bypassDocumentValidation: false"): _PYMONGO_BYPASS,
    ("bypassDocumentValidation", "FindOneAndReplace passes bypassDocumentValidation: false"): _PYMONGO_BYPASS,
    ("bypassDocumentValidation", "FindOneAndUpdate passes bypassDocumentValidation: false"): _PYMONGO_BYPASS,
}


def skip_reason(file_stem: str, description: str) -> str | None:
    return SKIPS.get((file_stem, description)) or SKIPS.get((file_stem, "*"))
