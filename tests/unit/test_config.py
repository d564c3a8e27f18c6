"""ConnectorConfig: parsing, defaults, every validation problem, round trips and secret hygiene."""

from __future__ import annotations

import pickle

import pytest

from connectors.mongodb.config import (
    KNOWN_PROPERTIES,
    CaptureMode,
    CaptureScope,
    CleanupPolicy,
    ConfigError,
    ConnectorConfig,
    CursorPipelineOrder,
    DeleteHandling,
    EventFormat,
    FullUpdateType,
    MessageTooLargePolicy,
    SnapshotMode,
    StartupMode,
    property_docs,
    validate,
)
from connectors.secrets import MASK, Secret

BASE = {
    "name": "inventory-cdc",
    "topic.prefix": "fulfillment",
    "mongodb.connection.string": "mongodb://h1:27017,h2:27017/?replicaSet=rs0",
}


def config(**overrides) -> ConnectorConfig:
    props = dict(BASE)
    for key, value in overrides.items():
        props[key.replace("__", ".")] = value
    return ConnectorConfig.from_properties(props)


def problems(props: dict) -> list:
    return validate(props)


def problems_with(**overrides) -> list:
    props = dict(BASE)
    props.update(overrides)
    return validate(props)


def only_problem(props: dict):
    found = validate(props)
    assert len(found) == 1, found
    return found[0]


# --- defaults ---------------------------------------------------------------------------------


def test_minimal_configuration_has_debezium_defaults():
    cfg = ConnectorConfig.from_properties(BASE)
    assert cfg.name == "inventory-cdc"
    assert cfg.topic_prefix == "fulfillment"
    assert cfg.auth_source == "admin"
    assert cfg.ssl_enabled is False
    assert cfg.members_auto_discover is True
    assert cfg.capture_mode is CaptureMode.CHANGE_STREAMS_UPDATE_FULL
    assert cfg.capture_mode_full_update_type is FullUpdateType.LOOKUP
    assert cfg.capture_scope is CaptureScope.DEPLOYMENT
    assert cfg.snapshot_mode is SnapshotMode.INITIAL
    assert cfg.startup_mode is StartupMode.INITIAL
    assert cfg.event_format is EventFormat.DEBEZIUM
    assert cfg.skipped_operations == ("t",)
    assert cfg.tombstones_on_delete is True
    assert cfg.provide_transaction_metadata is False
    assert cfg.heartbeat_interval_ms == 0
    assert cfg.heartbeat_topics_prefix == "__debezium-heartbeat"
    assert cfg.max_batch_size == 2048
    assert cfg.max_queue_size == 8192
    assert cfg.max_queue_size_in_bytes == 16 * 1024 * 1024
    assert cfg.poll_interval_ms == 500
    assert cfg.connect_backoff_initial_delay_ms == 1000
    assert cfg.connect_backoff_max_delay_ms == 120_000
    assert cfg.connect_max_attempts == 16
    assert cfg.membership_poll_interval_ms == 30_000
    assert cfg.snapshot_fetch_size == 0
    assert cfg.snapshot_max_threads == 1
    assert cfg.snapshot_delay_ms == 0
    assert cfg.offset_storage_topic == "cdc.offsets"
    assert cfg.topic_creation_partitions == -1
    assert cfg.topic_creation_replication_factor == -1
    assert cfg.topic_creation_cleanup_policy is CleanupPolicy.DELETE
    assert cfg.message_too_large_policy is MessageTooLargePolicy.FAIL
    assert cfg.schemas_enable is False
    assert cfg.cursor_pipeline_order is CursorPipelineOrder.INTERNAL_FIRST
    assert cfg.flattened_delete_handling is DeleteHandling.TOMBSTONE
    assert cfg.flattened_add_fields_prefix == "__"


def test_derived_topic_names():
    cfg = config()
    assert cfg.transaction_topic_name == "fulfillment.transaction"
    assert cfg.heartbeat_topic_name == "__debezium-heartbeat.fulfillment"
    assert cfg.errors_topic_name == "fulfillment.errors"
    cfg = config(**{"topic.transaction": "tx", "heartbeat.topics.prefix": "hb", "errors.topic": "dlq"})
    assert cfg.transaction_topic_name == "fulfillment.tx"
    assert cfg.heartbeat_topic_name == "hb.fulfillment"
    assert cfg.errors_topic_name == "dlq"


@pytest.mark.parametrize(
    ("mode", "full_document", "before"),
    [
        ("change_streams", None, None),
        ("change_streams_update_full", "updateLookup", None),
        ("change_streams_with_pre_image", None, "whenAvailable"),
        ("change_streams_update_full_with_pre_image", "updateLookup", "whenAvailable"),
    ],
)
def test_capture_mode_selects_watch_options(mode, full_document, before):
    cfg = config(**{"capture.mode": mode})
    assert cfg.full_document == full_document
    assert cfg.full_document_before_change == before


def test_post_image_full_update_type_uses_when_available():
    cfg = config(**{"capture.mode.full.update.type": "post_image"})
    assert cfg.full_document == "whenAvailable"


def test_schema_switches_for_key_and_value():
    assert (config().key_schemas, config().value_schemas) == (False, False)
    cfg = config(**{"schemas.enable": "true", "key.converter.schemas.enable": "false"})
    assert (cfg.key_schemas, cfg.value_schemas) == (False, True)


# --- value types ------------------------------------------------------------------------------


@pytest.mark.parametrize("raw", [True, "true", "TRUE", " yes ", "on", "1"])
def test_booleans_accept_debezium_strings_and_json(raw):
    assert config(**{"tombstones.on.delete": False, "provide.transaction.metadata": raw}).provide_transaction_metadata


@pytest.mark.parametrize("raw", [False, "false", "no", "off", "0"])
def test_false_booleans(raw):
    assert config(**{"tombstones.on.delete": raw}).tombstones_on_delete is False


@pytest.mark.parametrize("raw", [5000, "5000", " 5000 ", 5000.0])
def test_integers_accept_strings_and_numbers(raw):
    assert config(**{"heartbeat.interval.ms": raw}).heartbeat_interval_ms == 5000


def test_lists_accept_strings_and_json_lists():
    assert config(**{"database.include.list": "inventory, sales"}).database_include_list == ("inventory", "sales")
    assert config(**{"database.include.list": ["inventory", "sales"]}).database_include_list == ("inventory", "sales")


def test_regex_lists_keep_commas_inside_brackets_and_escapes():
    cfg = config(**{"collection.include.list": r"inventory\.c{1,3},sales\.a\,b,db\.(x|y,z)"})
    assert cfg.collection_include_list == (r"inventory\.c{1,3}", r"sales\.a\,b", r"db\.(x|y,z)")


def test_none_values_are_ignored_like_missing_properties():
    assert config(**{"mongodb.user": None, "capture.target": None}).user is None


def test_empty_strings_unset_optional_properties():
    cfg = config(**{"mongodb.user": "", "mongodb.password": "", "signal.data.collection": " "})
    assert cfg.user is None and cfg.password is None and cfg.signal_data_collection is None


def test_enums_are_case_insensitive():
    assert config(**{"snapshot.mode": "WHEN_NEEDED"}).snapshot_mode is SnapshotMode.WHEN_NEEDED


@pytest.mark.parametrize("mode", [m.value for m in SnapshotMode])
def test_every_snapshot_mode(mode):
    assert config(**{"snapshot.mode": mode}).snapshot_mode.value == mode


@pytest.mark.parametrize("mode", [m.value for m in CaptureMode])
def test_every_capture_mode(mode):
    assert config(**{"capture.mode": mode}).capture_mode.value == mode


@pytest.mark.parametrize("fmt", [f.value for f in EventFormat])
def test_every_event_format(fmt):
    assert config(**{"event.format": fmt}).event_format.value == fmt


@pytest.mark.parametrize("policy", ["delete", "compact", "compact,delete"])
def test_cleanup_policies(policy):
    assert config(**{"topic.creation.default.cleanup.policy": policy}).topic_creation_cleanup_policy.value == policy


@pytest.mark.parametrize(
    ("raw", "expected"),
    [("c", ("c",)), ("u,d", ("u", "d")), ("d,c,c", ("c", "d")), ("none", ()), ("NONE", ()), ("t", ("t",))],
)
def test_skipped_operations(raw, expected):
    assert config(**{"skipped.operations": raw}).skipped_operations == expected


def test_startup_timestamp_accepts_millis_and_iso8601():
    base = {"startup.mode": "timestamp", "snapshot.mode": "no_data"}
    assert config(**base, **{"startup.timestamp": 1_700_000_000_000}).startup_timestamp_ms == 1_700_000_000_000
    iso = config(**base, **{"startup.timestamp": "2024-05-01T12:00:00Z"})
    assert iso.startup_timestamp_ms == 1_714_564_800_000
    naive = config(**base, **{"startup.timestamp": "2024-05-01T12:00:00"})
    assert naive.startup_timestamp_ms == 1_714_564_800_000


def test_hosts_with_replica_set_and_ipv6():
    props = {k: v for k, v in BASE.items() if k != "mongodb.connection.string"}
    cfg = ConnectorConfig.from_properties({**props, "mongodb.hosts": "rs0/h1:27017,[::1]:27018,h3"})
    assert cfg.hosts.replica_set == "rs0"
    assert cfg.hosts.hosts == (("h1", 27017), ("::1", 27018), ("h3", 27017))


def test_mongodb_name_is_an_alias_of_topic_prefix():
    props = {k: v for k, v in BASE.items() if k != "topic.prefix"}
    assert ConnectorConfig.from_properties({**props, "mongodb.name": "legacy"}).topic_prefix == "legacy"


def test_alias_and_property_with_the_same_value_are_accepted():
    assert config(**{"mongodb.name": "fulfillment"}).topic_prefix == "fulfillment"


def test_connector_class_and_tasks_max_are_accepted_for_kafka_connect_configs():
    cfg = config(**{"connector.class": "io.debezium.connector.mongodb.MongoDbConnector", "tasks.max": "1"})
    assert cfg.connector_class == "io.debezium.connector.mongodb.MongoDbConnector"


def test_snapshot_filter_overrides_are_parsed():
    cfg = config(
        **{
            "snapshot.collection.filter.overrides": "inventory.orders",
            "snapshot.collection.filter.overrides.inventory.orders": '{"status": "A", "n": {"$numberLong": "5"}}',
        }
    )
    assert cfg.snapshot_filter("inventory.orders") == {"status": "A", "n": 5}
    assert cfg.snapshot_filter("inventory.other") is None


def test_snapshot_filter_accepts_a_json_object():
    cfg = config(
        **{
            "snapshot.collection.filter.overrides": "inventory.orders",
            "snapshot.collection.filter.overrides.inventory.orders": {"status": "A"},
        }
    )
    assert cfg.snapshot_filter("inventory.orders") == {"status": "A"}


def test_cursor_pipeline_is_parsed():
    cfg = config(**{"cursor.pipeline": '[{"$match": {"operationType": "insert"}}]'})
    assert cfg.cursor_pipeline_stages() == [{"$match": {"operationType": "insert"}}]
    assert config().cursor_pipeline_stages() == []


def test_hash_masks_are_collected_from_property_names():
    cfg = config(
        **{
            "field.mask.hash.SHA-256.with.salt.pepper": "inventory.customers.email,inventory.*.phone",
            "field.mask.hash.MD5.with.salt.a.b.c": "x.y.z",
        }
    )
    by_algorithm = {mask.algorithm: mask for mask in cfg.field_mask_hash}
    assert by_algorithm["SHA-256"].fields == ("inventory.customers.email", "inventory.*.phone")
    assert by_algorithm["SHA-256"].salt.reveal() == "pepper"
    assert by_algorithm["SHA-256"].hashlib_name == "sha256"
    assert by_algorithm["MD5"].salt.reveal() == "a.b.c"


# --- problems ---------------------------------------------------------------------------------


def test_missing_required_properties_are_all_reported():
    found = validate({})
    assert {p.property for p in found} == {"name", "topic.prefix", "mongodb.connection.string"}
    for problem in found:
        assert problem.property in problem.message


def test_not_a_mapping():
    assert validate(["name"])[0].message.startswith("the configuration must be an object")


def test_all_problems_are_returned_at_once():
    found = validate(
        {
            "name": "inventory cdc",
            "topic.prefx": "x",
            "mongodb.hosts": "h1:99999",
            "database.include.list": "inv(",
            "max.batch.size": -5,
            "snapshot.mode": "sometimes",
            "tombstones.on.delete": "maybe",
        }
    )
    props = [p.property for p in found]
    assert props == [
        "name",
        "topic.prefx",
        "mongodb.hosts",
        "database.include.list",
        "max.batch.size",
        "snapshot.mode",
        "tombstones.on.delete",
        "topic.prefix",
    ]


def test_from_properties_raises_config_error_with_every_problem():
    with pytest.raises(ConfigError) as raised:
        ConnectorConfig.from_properties({"name": "x"})
    assert {p.property for p in raised.value.problems} == {"topic.prefix", "mongodb.connection.string"}
    assert "topic.prefix is required" in str(raised.value)


@pytest.mark.parametrize(
    ("prop", "value", "expected"),
    [
        ("topic.prefx", "x", "did you mean 'topic.prefix'"),
        ("databse.include.list", "x", "did you mean 'database.include.list'"),
        ("mongodb.pasword", "x", "did you mean 'mongodb.password'"),
        ("snapshot.fetch.sise", "1", "did you mean 'snapshot.fetch.size'"),
        ("completely.unrelated", "x", "remove it or check its spelling"),
        ("field.mask.hash.SHA-256", "a.b.c", "field.mask.hash.<algorithm>.with.salt.<salt>"),
    ],
)
def test_unknown_properties_suggest_the_closest_name(prop, value, expected):
    problem = only_problem({**BASE, prop: value})
    assert problem.property == prop
    assert expected in problem.message


def test_non_string_property_name():
    assert only_problem({**BASE, 5: "x"}).message == "property names must be strings, got 5"


def test_alias_conflicting_with_property():
    problem = only_problem({**BASE, "mongodb.name": "other"})
    assert problem.property == "mongodb.name"
    assert "different values" in problem.message


INVALID_VALUES = [
    ("name", "", "must not be empty"),
    ("name", "my connector", "may only contain"),
    ("topic.prefix", "bad/prefix", "may only contain"),
    ("mongodb.connection.string", "http://h1", "expected mongodb://"),
    ("mongodb.connection.string", "mongodb://h1:99999", "Port must be"),
    ("mongodb.connection.string", "mongodb://u:p@ss@h1", "escaped"),
    ("mongodb.connection.string", "mongodb://", "expected mongodb://"),
    ("mongodb.connection.string", "mongodb+srv://a.example.com:27017/", "exactly one host and no port"),
    ("mongodb.connection.string", "mongodb+srv://a.example.com,b.example.com/", "exactly one host"),
    ("mongodb.connection.string", 42, "expected a string"),
    ("mongodb.connection.string", "mongodb://h1/?replicaSet=rs0&w=banana&wtimeoutMS=-1", "wtimeoutms"),
    ("mongodb.authsource", "", "must not be empty"),
    ("mongodb.password", 1234, "expected a string"),
    ("mongodb.ssl.enabled", "maybe", "expected true or false"),
    ("mongodb.ssl.invalid.hostname.allowed", 2, "expected true or false"),
    ("mongodb.connection.mode", "shards", "sharded, replica_set"),
    ("mongodb.members.auto.discover", "", "expected true or false"),
    ("mongodb.connect.timeout.ms", -1, "at least 0"),
    ("mongodb.server.selection.timeout.ms", "soon", "expected an integer"),
    ("mongodb.socket.timeout.ms", True, "expected an integer"),
    ("mongodb.heartbeat.frequency.ms", 100, "at least 500"),
    ("mongodb.poll.interval.ms", 0, "at least 1"),
    ("connect.backoff.initial.delay.ms", 0, "at least 1"),
    ("connect.backoff.max.delay.ms", -10, "at least 1"),
    ("connect.max.attempts", 0, "at least 1"),
    ("database.include.list", "inv[", "not a valid regular expression"),
    ("database.exclude.list", "a,,b", "empty item"),
    ("collection.include.list", "inventory\\.(", "not a valid regular expression"),
    ("collection.exclude.list", "*", "not a valid regular expression"),
    ("field.exclude.list", "inventory.customers", "<database>.<collection>.<field>"),
    ("field.exclude.list", "inventory..customers.a", "<database>.<collection>.<field>"),
    ("field.renames", "inventory.customers.a", "<new name>"),
    ("field.renames", "inventory.customers.a:b.c", "single field name"),
    ("field.renames", "inventory.customers.*:b", "must be named"),
    ("field.renames", "inventory.customers:b", "<database>.<collection>.<field>"),
    ("field.mask.redact", "customers.email", "<database>.<collection>.<field>"),
    ("field.mask.redact.replacement", 5, "expected a string"),
    ("skipped.operations", "x", "unknown operation"),
    ("skipped.operations", "none,c", "cannot be combined"),
    ("skipped.operations", "r", "unknown operation"),
    ("signal.data.collection", "signals", "<database>.<collection>"),
    ("capture.mode", "oplog", "expected one of change_streams"),
    ("capture.mode.full.update.type", "fetch", "expected one of lookup, post_image"),
    ("capture.scope", "cluster", "expected one of deployment, database, collection"),
    ("cursor.pipeline", "[{", "not valid JSON"),
    ("cursor.pipeline", '{"$match": {}}', "JSON array of stages"),
    ("cursor.pipeline", '[{"match": {}}]', "JSON array of stages"),
    ("cursor.pipeline.order", "last", "expected one of internal_first"),
    ("cursor.max.await.time.ms", -1, "at least 0"),
    ("event.format", "avro", "expected one of debezium, legacy, flattened"),
    ("schemas.enable", "yes please", "expected true or false"),
    ("key.converter.schemas.enable", "x", "expected true or false"),
    ("value.converter.schemas.enable", "x", "expected true or false"),
    ("tombstones.on.delete", "sometimes", "expected true or false"),
    ("provide.transaction.metadata", 3, "expected true or false"),
    ("topic.transaction", "tx topic", "not a valid Kafka topic name"),
    ("heartbeat.interval.ms", -1, "at least 0"),
    ("heartbeat.topics.prefix", "", "not a valid Kafka topic name"),
    ("flattened.delete.tombstone.handling.mode", "keep", "expected one of tombstone"),
    ("flattened.add.fields", "op,,ts_ms", "empty item"),
    ("flattened.add.fields", "op,color", "unknown field(s) color"),
    ("flattened.add.fields.prefix", 1, "expected a string"),
    ("message.too.large.policy", "truncate", "expected one of fail, skip"),
    ("debezium.compatibility", "1", "expected one of 3, 2"),
    ("json.non.finite.doubles", "null", "expected one of bare, extended"),
    ("errors.topic", "a" * 250, "not a valid Kafka topic name"),
    ("max.batch.size", 0, "at least 1"),
    ("max.queue.size", -1, "at least 1"),
    ("max.queue.size.in.bytes", -1, "at least 0"),
    ("poll.interval.ms", 0, "at least 1"),
    ("topic.creation.enable", "sure", "expected true or false"),
    ("topic.creation.default.partitions", 0, "-1 (the broker's default) or at least 1"),
    ("topic.creation.default.replication.factor", -2, "-1 (the broker's default) or at least 1"),
    ("topic.creation.default.cleanup.policy", "forever", "expected one of delete, compact"),
    ("topic.creation.default.max.message.bytes", 0, "-1 (the broker's default) or 1 to"),
    ("producer.override.max.request.size", 999, "must be 1,000 to 1,000,000,000 bytes"),
    ("offset.storage.topic", "cdc offsets", "not a valid Kafka topic name"),
    ("offset.storage.topic", "..", "not a valid Kafka topic name"),
    ("offset.storage.partitions", 0, "at least 1"),
    ("offset.storage.replication.factor", 0, "-1 (the broker's default)"),
    ("snapshot.mode", "sometimes", "expected one of initial"),
    ("snapshot.include.collection.list", "a(", "not a valid regular expression"),
    ("snapshot.collection.filter.overrides", "orders", "<database>.<collection>"),
    ("snapshot.delay.ms", -5, "at least 0"),
    ("snapshot.fetch.size", -1, "at least 0"),
    ("snapshot.max.threads", 0, "at least 1"),
    ("snapshot.chunk.size", 0, "at least 1"),
    ("snapshot.chunk.max.bytes", -1, "at least 0"),
    ("incremental.snapshot.chunk.size", -5, "at least 1"),
    ("startup.mode", "earliest", "expected one of initial, latest, timestamp"),
    ("connector.class", "io.debezium.connector.mysql.MySqlConnector", "MongoDB connector only"),
    ("tasks.max", 0, "at least 1"),
]


@pytest.mark.parametrize(
    ("prop", "value", "expected"), INVALID_VALUES, ids=[f"{p}={v!r}"[:60] for p, v, _ in INVALID_VALUES]
)
def test_invalid_values_name_the_property_and_the_fix(prop, value, expected):
    found = [p for p in problems_with(**{prop: value}) if p.property == prop]
    assert found, problems_with(**{prop: value})
    assert found[0].message.startswith(f"{prop}: ")
    assert expected.lower() in found[0].message.lower()


def test_every_property_has_an_invalid_value_test():
    tested = {prop for prop, _, _ in INVALID_VALUES}
    # Free-text properties accept any string; user and capture.target are checked against others.
    free_text = {"mongodb.user", "capture.target", "startup.timestamp", "mongodb.hosts"}
    assert set(KNOWN_PROPERTIES) - tested - free_text == set()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("rs0/", "no host given"),
        ("/h1:27017", "replica set name before '/' is empty"),
        ("h1:abc", "cannot parse hosts"),
        ("h1:0", "cannot parse hosts"),
        (5, "expected a string"),
    ],
)
def test_invalid_hosts(value, expected):
    props = {k: v for k, v in BASE.items() if k != "mongodb.connection.string"}
    problem = only_problem({**props, "mongodb.hosts": value})
    assert problem.property == "mongodb.hosts"
    assert expected in problem.message


@pytest.mark.parametrize("value", ["yesterday", -1, "2024-13-01T00:00:00Z"])
def test_invalid_startup_timestamp(value):
    found = problems_with(**{"startup.mode": "timestamp", "snapshot.mode": "no_data", "startup.timestamp": value})
    assert [p.property for p in found] == ["startup.timestamp"]


def test_srv_connection_strings_are_checked_without_dns():
    assert not problems_with(**{"mongodb.connection.string": "mongodb+srv://u:p@cluster0.example.invalid/?tls=true"})


def test_include_and_exclude_lists_are_exclusive():
    found = problems_with(**{"database.include.list": "a", "database.exclude.list": "b"})
    assert [(p.property, p.message) for p in found] == [
        ("database.exclude.list", "database.include.list and database.exclude.list are both set; use only one of them")
    ]
    found = problems_with(**{"collection.include.list": "a.b", "collection.exclude.list": "a.c"})
    assert [p.property for p in found] == ["collection.exclude.list"]


def test_database_include_with_collection_exclude_is_allowed():
    assert not problems_with(**{"database.include.list": "a", "collection.exclude.list": "a.c"})


def test_connection_string_and_hosts_are_exclusive():
    problem = only_problem({**BASE, "mongodb.hosts": "h1:27017"})
    assert problem.property == "mongodb.hosts"
    assert "keep one" in problem.message


@pytest.mark.parametrize("prop", ["mongodb.connection.string", "mongodb.hosts"])
def test_more_seeds_than_a_replica_set_has_members_are_refused_without_connecting(prop):
    hosts = ",".join(f"10.0.{i // 250}.{i % 250}:27017" for i in range(51))
    value = f"mongodb://{hosts}/?replicaSet=rs0" if prop == "mongodb.connection.string" else hosts
    problem = only_problem({**{k: v for k, v in BASE.items() if k != "mongodb.connection.string"}, prop: value})
    assert problem.property == prop
    assert "names 51 hosts" in problem.message and "at most 50 seed hosts" in problem.message
    assert not validate({**BASE, "mongodb.connection.string": f"mongodb://{hosts.rpartition(',')[0]}/"})


def test_user_in_both_places():
    problem = only_problem({**BASE, "mongodb.connection.string": "mongodb://a:b@h1/", "mongodb.user": "c"})
    assert problem.property == "mongodb.user"


def test_password_without_user():
    problem = only_problem({**BASE, "mongodb.password": "secret"})
    assert problem.property == "mongodb.password"
    assert "secret" not in problem.message


def test_password_with_user_in_connection_string_is_fine():
    assert not validate({**BASE, "mongodb.connection.string": "mongodb://a@h1/", "mongodb.password": "secret"})


def test_direct_connection_needs_a_single_host():
    problem = only_problem({**BASE, "mongodb.members.auto.discover": "false"})
    assert problem.property == "mongodb.members.auto.discover"
    assert not validate(
        {**BASE, "mongodb.connection.string": "mongodb://h1:27017", "mongodb.members.auto.discover": "false"}
    )


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ({"capture.scope": "database"}, "needs capture.target: the database name"),
        ({"capture.scope": "database", "capture.target": "a.b"}, "must be a database name"),
        ({"capture.scope": "collection"}, "needs capture.target: <database>.<collection>"),
        ({"capture.scope": "collection", "capture.target": "orders"}, "expected <database>.<collection>"),
        ({"capture.target": "inventory"}, "only used with capture.scope=database or collection"),
    ],
)
def test_capture_target_rules(props, expected):
    problem = only_problem({**BASE, **props})
    assert problem.property == "capture.target"
    assert expected in problem.message


def test_capture_scopes_with_targets_are_valid():
    assert not problems_with(**{"capture.scope": "database", "capture.target": "inventory"})
    assert not problems_with(**{"capture.scope": "collection", "capture.target": "inventory.orders"})


def test_backoff_max_below_initial():
    problem = only_problem({**BASE, "connect.backoff.initial.delay.ms": 5000, "connect.backoff.max.delay.ms": 1000})
    assert problem.property == "connect.backoff.max.delay.ms"


def test_queue_must_be_larger_than_batch():
    problem = only_problem({**BASE, "max.queue.size": 100, "max.batch.size": 100})
    assert problem.property == "max.queue.size"
    assert "larger than max.batch.size" in problem.message


def test_cross_checks_are_skipped_when_an_input_already_failed():
    found = problems_with(**{"max.queue.size": "lots", "max.batch.size": 10})
    assert [p.property for p in found] == ["max.queue.size"]


@pytest.mark.parametrize(
    ("props", "prop", "expected"),
    [
        ({"startup.mode": "timestamp", "snapshot.mode": "no_data"}, "startup.timestamp", "needs startup.timestamp"),
        ({"startup.timestamp": 5}, "startup.timestamp", "only used with startup.mode=timestamp"),
        ({"startup.mode": "latest"}, "startup.mode", "set snapshot.mode=no_data"),
        ({"startup.mode": "latest", "snapshot.mode": "when_needed"}, "startup.mode", "set snapshot.mode=no_data"),
    ],
)
def test_startup_rules(props, prop, expected):
    problem = only_problem({**BASE, **props})
    assert problem.property == prop
    assert expected in problem.message


@pytest.mark.parametrize("snapshot_mode", ["never", "no_data"])
def test_latest_startup_without_snapshot(snapshot_mode):
    assert not problems_with(**{"startup.mode": "latest", "snapshot.mode": snapshot_mode})


def test_snapshot_filter_listed_without_query():
    problem = only_problem({**BASE, "snapshot.collection.filter.overrides": "inventory.orders"})
    assert problem.property == "snapshot.collection.filter.overrides.inventory.orders"
    assert "is missing" in problem.message


def test_snapshot_filter_query_without_listing():
    problem = only_problem({**BASE, "snapshot.collection.filter.overrides.inventory.orders": "{}"})
    assert "not listed" in problem.message


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("snapshot.collection.filter.overrides.orders", "{}", "<database>.<collection>"),
        ("snapshot.collection.filter.overrides.inventory.orders", "{status: ", "not valid JSON"),
        ("snapshot.collection.filter.overrides.inventory.orders", "[1]", "expected a JSON object"),
    ],
)
def test_invalid_snapshot_filter_query(key, value, expected):
    found = [p for p in problems_with(**{key: value}) if p.property == key]
    assert expected in found[0].message


@pytest.mark.parametrize(
    ("key", "value", "expected"),
    [
        ("field.mask.hash.SHA-999.with.salt.x", "a.b.c", "unknown hash algorithm"),
        ("field.mask.hash.SHAKE-128.with.salt.x", "a.b.c", "unknown hash algorithm"),
        ("field.mask.hash.SHA-256.with.salt.x", "a.b", "<database>.<collection>.<field>"),
        ("field.mask.hash.SHA-256.with.salt.x", "", "at least one field"),
    ],
)
def test_invalid_hash_masks_never_show_the_salt(key, value, expected):
    problem = only_problem({**BASE, key: value})
    assert expected in problem.message
    assert problem.property.endswith(MASK)
    assert ".salt.x" not in problem.message


def test_flattened_format_has_no_value_schema():
    problem = only_problem({**BASE, "event.format": "flattened", "schemas.enable": "true"})
    assert problem.property == "schemas.enable"
    problem = only_problem({**BASE, "event.format": "flattened", "value.converter.schemas.enable": "true"})
    assert problem.property == "value.converter.schemas.enable"
    assert not validate(
        {**BASE, "event.format": "flattened", "schemas.enable": "true", "value.converter.schemas.enable": "false"}
    )


# --- round trips ------------------------------------------------------------------------------

RICH = {
    **BASE,
    "mongodb.connection.string": "mongodb://cdc:p%40ss@h1:27017,h2:27017/?replicaSet=rs0&authSource=admin",
    "mongodb.ssl.enabled": "true",
    "database.include.list": "inventory,sales",
    "collection.exclude.list": r"inventory\.tmp_.*,sales\.c{1,3}",
    "field.exclude.list": "inventory.customers.ssn,*.*.internal",
    "field.renames": "inventory.customers.name:full_name",
    "field.mask.redact": "inventory.customers.card.number",
    "field.mask.hash.SHA-256.with.salt.pepper": "inventory.customers.email",
    "skipped.operations": "none",
    "signal.data.collection": "inventory.signals",
    "capture.mode": "change_streams_with_pre_image",
    "capture.scope": "database",
    "capture.target": "inventory",
    "cursor.pipeline": '[{"$match": {"ns.coll": {"$ne": "tmp"}}}]',
    "event.format": "legacy",
    "schemas.enable": True,
    "provide.transaction.metadata": True,
    "heartbeat.interval.ms": 10000,
    "max.batch.size": 100,
    "max.queue.size": 1000,
    "snapshot.mode": "when_needed",
    "snapshot.collection.filter.overrides": "inventory.orders",
    "snapshot.collection.filter.overrides.inventory.orders": '{"status": "A"}',
    "startup.mode": "initial",
    "topic.creation.default.cleanup.policy": "compact,delete",
    "topic.creation.default.max.message.bytes": 4194304,
    "producer.override.max.request.size": 4194304,
}


def test_to_properties_round_trips():
    cfg = ConnectorConfig.from_properties(RICH)
    assert ConnectorConfig.from_properties(cfg.to_properties()) == cfg
    assert ConnectorConfig.from_properties(cfg.to_properties(include_defaults=True)) == cfg


def test_to_properties_lists_only_what_differs_from_defaults():
    assert ConnectorConfig.from_properties(BASE).to_properties() == BASE


def test_to_properties_with_defaults_lists_every_property():
    props = ConnectorConfig.from_properties(BASE).to_properties(include_defaults=True)
    assert set(KNOWN_PROPERTIES) <= set(props)


def test_to_properties_keeps_secrets_for_storage():
    props = ConnectorConfig.from_properties({**RICH, "mongodb.user": None}).to_properties()
    assert props["mongodb.connection.string"] == RICH["mongodb.connection.string"]
    assert props["field.mask.hash.SHA-256.with.salt.pepper"] == "inventory.customers.email"


def test_hosts_round_trip():
    props = {k: v for k, v in BASE.items() if k != "mongodb.connection.string"}
    cfg = ConnectorConfig.from_properties({**props, "mongodb.hosts": "rs0/h1,[::1]:27018"})
    assert cfg.to_properties()["mongodb.hosts"] == "rs0/h1:27017,[::1]:27018"
    assert ConnectorConfig.from_properties(cfg.to_properties()) == cfg


# --- secrets ----------------------------------------------------------------------------------

SECRET_PROPS = {
    **BASE,
    "mongodb.connection.string": "mongodb://cdc:uri-pass@h1:27017/?replicaSet=rs0&tlsCertificateKeyFilePassword=tls-pass"
    "&authMechanismProperties=AWS_SESSION_TOKEN:aws-token",
    "mongodb.password": "prop-pass",
    "field.mask.hash.SHA-256.with.salt.salty-salt": "inventory.customers.email",
}
SECRETS = ("uri-pass", "tls-pass", "aws-token", "prop-pass", "salty-salt")


def test_redacted_masks_every_secret():
    cfg = ConnectorConfig.from_properties(SECRET_PROPS)
    shown = repr(cfg.redacted())
    for secret in SECRETS:
        assert secret not in shown
    redacted = cfg.redacted()
    assert redacted["mongodb.password"] == MASK
    assert redacted["mongodb.connection.string"].startswith(f"mongodb://cdc:{MASK}@h1:27017/?replicaSet=rs0")
    assert f"field.mask.hash.SHA-256.with.salt.{MASK}" in redacted


@pytest.mark.parametrize("render", [repr, str, lambda c: f"{c}", lambda c: "%s" % (c,)])  # noqa: UP031
def test_repr_and_str_never_leak(render):
    text = render(ConnectorConfig.from_properties(SECRET_PROPS))
    assert text.startswith("ConnectorConfig(")
    for secret in SECRETS:
        assert secret not in text


def test_secret_fields_are_wrapped():
    cfg = ConnectorConfig.from_properties(SECRET_PROPS)
    assert isinstance(cfg.password, Secret)
    assert str(cfg.password) == MASK and f"{cfg.password}" == MASK and "prop-pass" not in repr(cfg.password)
    assert cfg.password.reveal() == "prop-pass"


def test_secrets_refuse_pickling():
    with pytest.raises(TypeError):
        pickle.dumps(Secret("x"))


def test_config_error_never_shows_secrets():
    with pytest.raises(ConfigError) as raised:
        ConnectorConfig.from_properties({**SECRET_PROPS, "max.batch.size": 0})
    for secret in SECRETS:
        assert secret not in str(raised.value)


def test_mongo_client_options_with_connection_string():
    cfg = ConnectorConfig.from_properties(SECRET_PROPS)
    options = cfg.mongo_client_options()
    assert options["host"] == SECRET_PROPS["mongodb.connection.string"]
    assert "username" not in options


def test_mongo_client_options_with_hosts_and_credentials():
    props = {k: v for k, v in BASE.items() if k != "mongodb.connection.string"}
    cfg = ConnectorConfig.from_properties(
        {
            **props,
            "mongodb.hosts": "rs0/h1:27017,h2:27018",
            "mongodb.user": "cdc",
            "mongodb.password": "pw",
            "mongodb.authsource": "users",
            "mongodb.ssl.enabled": True,
            "mongodb.ssl.invalid.hostname.allowed": True,
            "mongodb.socket.timeout.ms": 5000,
        }
    )
    options = cfg.mongo_client_options()
    assert options["host"] == ["h1:27017", "h2:27018"]
    assert options["replicaSet"] == "rs0"
    assert (options["username"], options["password"], options["authSource"]) == ("cdc", "pw", "users")
    assert options["tls"] is True and options["tlsAllowInvalidHostnames"] is True
    assert options["socketTimeoutMS"] == 5000
    assert "directConnection" not in options


def test_mongo_client_options_direct_connection():
    cfg = config(**{"mongodb.connection.string": "mongodb://h1:27017", "mongodb.members.auto.discover": False})
    assert cfg.mongo_client_options()["directConnection"] is True


# --- documentation ----------------------------------------------------------------------------


def test_every_property_has_a_meaning():
    for name, _default, doc in property_docs():
        assert doc and doc.endswith((".", ")")), name


def test_docs_list_every_property_with_its_default():
    import json
    import pathlib

    text = (pathlib.Path(__file__).parents[2] / "docs" / "configuration.md").read_text()
    rows = {line.split("|")[1].strip().strip("`"): line for line in text.splitlines() if line.startswith("| `")}
    for name, default, _doc in property_docs():
        assert name in rows, f"docs/configuration.md does not describe {name}"
        if default not in (None, "", ()):
            shown = json.dumps(default) if isinstance(default, bool) else str(default)
            assert f"`{shown}`" in rows[name].split("|")[2], f"{name}: default {shown} not documented"


def test_parser_messages_are_scrubbed_of_uri_secrets():
    from connectors.mongodb.config_values import scrub_secrets

    uri = "mongodb://u:p%40ss@h/?authMechanismProperties=AWS_SESSION_TOKEN:tok&w=1"
    message = scrub_secrets("bad p@ss and p%40ss and AWS_SESSION_TOKEN:tok", uri)
    assert message == "bad ******** and ******** and ********"
