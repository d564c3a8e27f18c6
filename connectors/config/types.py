"""Types of the connector configuration: option enums, masks and validation problems."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from connectors.secrets import MASK, Secret


class SnapshotMode(StrEnum):
    INITIAL = "initial"
    INITIAL_ONLY = "initial_only"
    NEVER = "never"
    NO_DATA = "no_data"
    WHEN_NEEDED = "when_needed"
    ALWAYS = "always"

    @property
    def takes_snapshot(self) -> bool:
        return self not in (SnapshotMode.NEVER, SnapshotMode.NO_DATA)

    @property
    def streams(self) -> bool:
        return self is not SnapshotMode.INITIAL_ONLY


class CaptureMode(StrEnum):
    CHANGE_STREAMS = "change_streams"
    CHANGE_STREAMS_UPDATE_FULL = "change_streams_update_full"
    CHANGE_STREAMS_WITH_PRE_IMAGE = "change_streams_with_pre_image"
    CHANGE_STREAMS_UPDATE_FULL_WITH_PRE_IMAGE = "change_streams_update_full_with_pre_image"

    @property
    def full_update(self) -> bool:
        return "update_full" in self.value

    @property
    def pre_image(self) -> bool:
        return self.value.endswith("with_pre_image")


class FullUpdateType(StrEnum):
    LOOKUP = "lookup"
    POST_IMAGE = "post_image"


class CaptureScope(StrEnum):
    DEPLOYMENT = "deployment"
    DATABASE = "database"
    COLLECTION = "collection"


class ConnectionMode(StrEnum):
    SHARDED = "sharded"  # a sharded cluster is read through mongos (Debezium 2.2+ default, the only 3.x mode)
    REPLICA_SET = "replica_set"  # each shard's replica set is read directly (Debezium 1.x/2.x)


class CursorPipelineOrder(StrEnum):
    INTERNAL_FIRST = "internal_first"
    USER_FIRST = "user_first"
    USER_ONLY = "user_only"


class StartupMode(StrEnum):
    INITIAL = "initial"
    LATEST = "latest"
    TIMESTAMP = "timestamp"


class EventFormat(StrEnum):
    DEBEZIUM = "debezium"
    LEGACY = "legacy"
    FLATTENED = "flattened"


class DeleteHandling(StrEnum):
    """What the flattened format emits for a delete (Debezium's delete.tombstone.handling.mode)."""

    TOMBSTONE = "tombstone"
    DROP = "drop"
    REWRITE = "rewrite"
    REWRITE_WITH_TOMBSTONE = "rewrite-with-tombstone"


class DebeziumCompatibility(StrEnum):
    """Which Debezium release the change events' source block and transaction metadata look like (docs/events.md)."""

    V3 = "3"  # 2.7+/3.x: ts_us, ts_ns, no rs; ts_ms is the event's wall time; data collections <db>.<collection>
    V2 = "2"  # 2.0-2.5: rs, ts_ms from the cluster time (seconds x 1000), data collections <rs>.<db>.<collection>


class NonFiniteDoubles(StrEnum):
    """How NaN and ±Infinity are written inside documents."""

    BARE = "bare"  # NaN, Infinity, -Infinity: what the Java driver's strict mode (and so Debezium) writes
    EXTENDED = "extended"  # {"$numberDouble": "NaN"}: strict JSON


class MessageTooLargePolicy(StrEnum):
    FAIL = "fail"
    SKIP = "skip"


class CleanupPolicy(StrEnum):
    DELETE = "delete"
    COMPACT = "compact"
    COMPACT_DELETE = "compact,delete"


SKIPPABLE_OPERATIONS = ("c", "u", "d", "t")
# Fields of the Debezium MongoDB `source` block and of the envelope, for flattened.add.fields.
SOURCE_FIELDS = (
    "version",
    "connector",
    "name",
    "ts_ms",
    "snapshot",
    "db",
    "sequence",
    "rs",
    "collection",
    "ord",
    "lsid",
    "txnNumber",
    "wallTime",
)
ENVELOPE_FIELDS = ("op", "ts_ms")
DEBEZIUM_CONNECTOR_CLASS = "io.debezium.connector.mongodb.MongoDbConnector"
ACCEPTED_CONNECTOR_CLASSES = frozenset({DEBEZIUM_CONNECTOR_CLASS, "cdcplatform.mongodb"})
HASH_MASK_PREFIX = "field.mask.hash."
SNAPSHOT_FILTER_PREFIX = "snapshot.collection.filter.overrides."


@dataclass(frozen=True)
class Problem:
    """One invalid input: the property (as the user wrote it) and a message naming the fix."""

    property: str
    message: str


@dataclass(frozen=True)
class HashMask:
    """``field.mask.hash.<algorithm>.with.salt.<salt>``: hash these fields with a salted digest."""

    algorithm: str
    salt: Secret
    fields: tuple[str, ...]

    @property
    def hashlib_name(self) -> str:
        return hashlib_name(self.algorithm)

    def property_name(self, *, redact: bool = False) -> str:
        salt = MASK if redact else self.salt.reveal()
        return f"{HASH_MASK_PREFIX}{self.algorithm}.with.salt.{salt}"


def hashlib_name(java_name: str) -> str:
    """Java's MessageDigest names (``SHA-256``, ``SHA3-512``, ``MD5``) as hashlib names."""
    name = java_name.strip().lower()
    if name.startswith("sha-"):
        name = "sha" + name[4:]
    return name.replace("-", "_").replace("/", "_")


class ConfigError(ValueError):
    def __init__(self, problems: list[Problem]) -> None:
        self.problems = problems
        super().__init__("invalid connector configuration:\n" + "\n".join(f"- {p.message}" for p in problems))
