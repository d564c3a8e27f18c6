"""Control-plane operations. Each records the desired state in the database, writes an audit entry and, once the
transaction commits, tells running pipelines through `workers.control.notify` (Redis pub/sub, heard within a
second). The worker side (supervisor, pipeline tasks) reconciles desired and observed state; the hooks it must
honour are listed in docs/api.md ("Worker contract").

Views, the Kafka Connect surface, the admin and the management commands call these functions and nothing else
that writes.
"""

from __future__ import annotations

import logging
from typing import Any

import redis
from bson import Timestamp
from confluent_kafka import KafkaException
from django.conf import settings
from django.db import IntegrityError, transaction
from django.utils import timezone

from connectors.config.types import ConfigError
from connectors.kafka import OffsetRecord, OffsetStoreError, OffsetTombstone
from connectors.kafka.offset_record import REPLICA_SET_KEY
from connectors.mongodb.filters import CaptureScope, watch_target
from connectors.mongodb.records import Namespace
from connectors.postgres import leftovers
from web.connectors import audit, drafts, offset_keys, partition_offsets
from web.connectors import offsets as offset_views
from web.connectors import properties as props
from web.connectors.definitions import config_version, describe, engine_config, flat_of, parts_of, save_parts
from web.connectors.models import (
    ActivityEntry,
    ActivityKind,
    Connector,
    ConnectorFilter,
    ControlRequest,
    DesiredState,
    Phase,
    ReplicaSetState,
    RequestStatus,
    SnapshotRequest,
    SnapshotStatus,
    SourceKind,
)
from web.connectors.partition_offsets import PartitionOffset
from workers import control

log = logging.getLogger(__name__)

UNKNOWN_REPLICA_SET = "?"  # what workers report when the connector failed before its replica sets were known
STATE_COMMANDS = {DesiredState.RUNNING: "resume", DesiredState.PAUSED: "pause", DesiredState.STOPPED: "stop"}
STATE_ACTIONS = {DesiredState.RUNNING: "resume", DesiredState.PAUSED: "pause", DesiredState.STOPPED: "stop"}


class ServiceError(Exception):
    status_code = 400


class AlreadyExists(ServiceError):
    status_code = 409


def already_exists_message(name: str) -> str:
    return f"Connector {name} already exists"


class Refused(ServiceError):
    """The request cannot be served in the connector's current configuration or state (nothing was recorded)."""

    status_code = 409


class PipelineRunning(ServiceError):
    """The pipeline must be stopped first; each surface says how in its own terms (`with_hint`)."""

    status_code = 409

    def __init__(self, message: str, running: dict[str, str], stoppable: bool = True):
        super().__init__(message)
        self.running = running
        self.stoppable = stoppable  # False: asked to stop, still running (retrying is the answer)

    def with_hint(self, hint: str) -> str:
        return f"{self}; {hint}" if self.stoppable else str(self)


class Unavailable(ServiceError):
    status_code = 503


class NotForThisSource(ServiceError):
    """An action this connector's source does not support (yet)."""

    status_code = 409


def _target(connector: Connector | str) -> str:
    return f"connector:{connector if isinstance(connector, str) else connector.name}"


def _notify_on_commit(name: str, command: str, payload: dict | None = None, replica_set: str | None = None) -> None:
    def sent(receivers: int | None) -> None:
        record_activity(name, replica_set or "", ActivityKind.SENT, sent_text(command, receivers))

    transaction.on_commit(lambda: control.notify(name, command, payload, replica_set=replica_set, on_sent=sent))


def sent_text(command: str, receivers: int | None) -> str:
    """What the activity log says of a command sent to the pipelines (how many heard it)."""
    if receivers is None:
        return f"{command} not sent: Redis is unreachable; the supervisor applies the desired state when it can"
    if receivers == 0:
        return f"{command} sent, but no pipeline is listening now; the supervisor applies the desired state"
    return f"{command} sent to {receivers} listening pipeline{'s' if receivers > 1 else ''}"


def _user(user):
    return user if getattr(user, "is_authenticated", False) else None


def _command_request(connector: Connector, command: str, user, replica_set: str | None = None,
                     reason: str = "") -> dict:
    """Records a control command as a ControlRequest and sends it with its id; returns the payload sent."""
    request = ControlRequest.objects.create(connector=connector, command=command, replica_set=replica_set or "",
                                            requested_by=_user(user))
    payload = {"request_id": request.pk}
    if reason:
        payload["reason"] = reason
    _notify_on_commit(connector.name, command, payload, replica_set)
    return payload


# --- definitions ------------------------------------------------------------------------------------------------

def create_connector(parts: props.Parts, *, user, source: str,
                     desired_state: str = DesiredState.RUNNING) -> Connector:
    if Connector.objects.filter(name=parts.name).exists():
        raise AlreadyExists(already_exists_message(parts.name))
    try:
        with transaction.atomic():
            connector = save_parts(Connector(desired_state=desired_state), parts, user)
            audit.record(user, source, "connector.create", _target(connector), None, describe(connector))
    except IntegrityError:
        raise AlreadyExists(already_exists_message(parts.name)) from None
    log.info("connector %s created (desired state %s)", connector.name, connector.desired_state)
    return connector


def update_connector(connector: Connector, parts: props.Parts, *, user, source: str,
                     desired_state: str | None = None) -> Connector:
    """Replaces the configuration; a running connector is restarted to pick it up (as Kafka Connect does)."""
    if parts.name != connector.name:
        raise ServiceError(f"a connector cannot be renamed ({connector.name} -> {parts.name}); create a new one")
    with transaction.atomic():
        before, old_flat, old_state = describe(connector), flat_of(connector), connector.desired_state
        if desired_state:
            connector.desired_state = desired_state
        save_parts(connector, parts, user)
        changed = flat_of(connector) != old_flat
        if changed or connector.desired_state != old_state:
            audit.record(user, source, "connector.update", _target(connector), before, describe(connector))
        if connector.desired_state != old_state:
            _command_request(connector, STATE_COMMANDS[connector.desired_state], user)
        elif changed and connector.desired_state == DesiredState.RUNNING:
            _command_request(connector, "restart", user, reason="configuration changed")
    return connector


def delete_connector(connector: Connector, *, user, source: str, delete_offsets: bool = False,
                     drop_slot: bool = False, drop_publication: bool | None = None) -> list[leftovers.Outcome]:
    """Deletes the definition; its committed offsets stay in Kafka (as in Kafka Connect) unless `delete_offsets`:
    then the pipeline is stopped first (its final commit) and a tombstone written for every replica set, so a
    connector created later under the same name starts as on a first run.

    A PostgreSQL connector's replication slot and publication stay on the server (as with Debezium) unless
    `drop_slot` / `drop_publication` (None: as `drop_slot` when the connector creates its publication, i.e.
    publication.autocreate.mode is not disabled). Dropping waits for the pipeline to stop (refused with
    PipelineRunning when it does not) and happens once the connector is deleted; whatever could not be dropped is
    reported in the returned outcomes (each a sentence with the SQL to drop it by hand), never as an error."""
    name = connector.name
    server = postgres_config(connector)
    if server is not None and drop_publication is None:
        drop_publication = drop_slot and creates_publication(server)
    dropping = server is not None and (drop_slot or drop_publication)
    if delete_offsets and connector.source != SourceKind.MONGODB:
        reset_offsets(connector, "initial", user=user, source=source, stop=True)
    elif delete_offsets or dropping:
        ensure_stopped(connector, stop=True, user=user, source=source)
    if delete_offsets and connector.source == SourceKind.MONGODB:
        current = read_offsets(connector)
        tombstones = [OffsetTombstone(name, rs, partition_key_field(current.get(rs)))
                      for rs in known_replica_sets(connector, current)]
        if tombstones:
            alter_offsets(connector, tombstones, user=user, source=source)
    shared = shared_server_objects(connector, server) if server is not None else {}
    with transaction.atomic():
        before = describe(connector)
        connector.delete()
        audit.record(user, source, "connector.delete", _target(name), before,
                     {"offsets": "deleted"} if delete_offsets else None)
        _notify_on_commit(name, "delete")
    if server is None:
        return []
    return server_leftovers(server, drop_slot=drop_slot, drop_publication=bool(drop_publication), shared=shared)


def postgres_config(connector: Connector):
    """The engine configuration of a PostgreSQL connector; None for other sources or an unreadable one."""
    if connector.source != SourceKind.POSTGRES:
        return None
    try:
        return engine_config(connector)
    except ConfigError:
        return None


def creates_publication(config) -> bool:
    """Whether the connector makes its publication itself (all_tables, filtered), rather than using one made by
    hand (disabled)."""
    return config.publication_autocreate_mode != "disabled"


def shared_server_objects(connector: Connector, config) -> dict[str, str]:
    """{"slot"/"publication": name of another stored connector using the same one} on the same server and
    database: those are never dropped with this connector."""
    found: dict[str, str] = {}
    place = (config.hostname, config.port, config.dbname)
    for other in Connector.objects.filter(source=SourceKind.POSTGRES).exclude(pk=connector.pk).order_by("name"):
        theirs = postgres_config(other)
        if theirs is None or (theirs.hostname, theirs.port, theirs.dbname) != place:
            continue
        if theirs.slot_name == config.slot_name:
            found.setdefault("slot", other.name)
        if theirs.publication_name == config.publication_name:
            found.setdefault("publication", other.name)
    return found


def server_leftovers(config, *, drop_slot: bool, drop_publication: bool,
                     shared: dict[str, str]) -> list[leftovers.Outcome]:
    """Drops what was asked and not shared; an outcome for the slot and one for the publication."""
    asked = {"slot": drop_slot, "publication": drop_publication}
    dropped = {outcome.kind: outcome for outcome in leftovers.drop(
        config, slot=asked["slot"] and "slot" not in shared,
        publication=asked["publication"] and "publication" not in shared)}
    outcomes = []
    for kind in ("slot", "publication"):
        if kind in dropped:
            outcomes.append(dropped[kind])
        elif kind in shared:
            outcomes.append(leftovers.kept(config, kind, f"connector {shared[kind]} uses it too"))
        else:
            outcomes.append(leftovers.kept(config, kind, "not asked to drop it"))
    for outcome in outcomes:
        log.log(logging.INFO if outcome.dropped or outcome.sql is None else logging.WARNING, "%s", outcome.message)
    return outcomes


def clone_connector(original: Connector, name: str, topic_prefix: str, *, user, source: str) -> Connector:
    """A new connector with the configuration of `original` (secrets and filter rows included, copied server-side
    so they never pass through a form), under another name and topic prefix; created stopped, to be reviewed."""
    parts = parts_of(original)
    parts.name, parts.topic_prefix = name, topic_prefix
    try:
        validated = drafts.prepare(props.join(parts))
    except drafts.InvalidConfiguration as error:
        raise ServiceError("; ".join(f"{p.property or 'configuration'}: {p.message}" for p in error.problems)) from None
    return create_connector(validated, user=user, source=source, desired_state=DesiredState.STOPPED)


# --- filter rows (validated by the caller against the composed configuration) -----------------------------------

def save_filter(connector: Connector, row: ConnectorFilter | None, fields: dict[str, Any], *, user,
                source: str) -> ConnectorFilter:
    """Creates (row=None) or changes one filter row; a running connector restarts to apply it."""
    with transaction.atomic():
        before = describe(connector)
        if row is None:
            if "position" not in fields:
                last = connector.filters.filter(kind=fields["kind"]).order_by("-position").first()
                fields = {**fields, "position": last.position + 1 if last else 0}
            row = ConnectorFilter.objects.create(connector=connector, **fields)
            action = "filter.create"
        else:
            for key, value in fields.items():
                setattr(row, key, value)
            row.save()
            action = "filter.update"
        _config_changed(connector, action, before, user=user, source=source)
    return row


def delete_filter(row: ConnectorFilter, *, user, source: str) -> None:
    connector = row.connector
    problems = drafts.check_rows(connector, drafts.rows_of(connector.filters.exclude(pk=row.pk)))
    if problems:
        raise ServiceError("; ".join(problem.message for problem in problems))
    with transaction.atomic():
        before = describe(connector)
        row.delete()
        _config_changed(connector, "filter.delete", before, user=user, source=source)


def _config_changed(connector: Connector, action: str, before: dict, *, user, source: str) -> None:
    connector.updated_by = user if getattr(user, "is_authenticated", False) else None
    connector.save(update_fields=["updated_by", "updated_at"])
    audit.record(user, source, action, _target(connector), before, describe(connector))
    if connector.desired_state == DesiredState.RUNNING:
        _command_request(connector, "restart", user, reason="filters changed")


# --- desired state ------------------------------------------------------------------------------------------------

def request_state(connector: Connector, state: str, *, user, source: str) -> Connector:
    """Records the desired state (running, paused, stopped) and tells the running pipelines. The command is kept as
    a ControlRequest that ends done or failed (finish_request); `latest_request(connector)` returns it."""
    state = DesiredState(state)
    with transaction.atomic():
        previous = connector.desired_state
        connector.desired_state = state
        connector.updated_by = _user(user)
        connector.save(update_fields=["desired_state", "updated_by", "updated_at"])
        audit.record(user, source, f"connector.{STATE_ACTIONS[state]}", _target(connector),
                     {"desired_state": previous}, {"desired_state": state.value})
        _command_request(connector, STATE_COMMANDS[state], user)
    return connector


def latest_request(connector: Connector) -> ControlRequest | None:
    return connector.control_requests.order_by("-id").first()


def known_partitions(connector: Connector) -> list[str]:
    """The replica sets a connector is known to have: observed by workers (the `?` placeholder excluded)."""
    return sorted(connector.replica_sets.exclude(replica_set=UNKNOWN_REPLICA_SET)
                  .values_list("replica_set", flat=True))


def request_restart(connector: Connector, *, user, source: str, replica_set: str | None = None) -> ControlRequest:
    """Stops the running pipelines; the supervisor starts them again while the desired state is running."""
    if connector.desired_state != DesiredState.RUNNING:
        raise Refused(f"{connector.name} is {connector.desired_state}: there is no pipeline to restart; resume it")
    if replica_set is not None:
        known = known_partitions(connector)
        if replica_set not in known:
            raise ServiceError(f"{connector.name} has no replica set {replica_set!r}; known: "
                               f"{', '.join(known) or 'none yet (it has not reported)'}")
    with transaction.atomic():
        audit.record(user, source, "connector.restart", _target(connector), None,
                     {"replica_set": replica_set} if replica_set else None)
        payload = _command_request(connector, "restart", user, replica_set)
    return ControlRequest.objects.get(pk=payload["request_id"])


# sources whose pipelines take ad-hoc snapshots
INCREMENTAL_SOURCES = (SourceKind.MONGODB, SourceKind.POSTGRES, SourceKind.MYSQL, SourceKind.MARIADB)


def snapshot_refusal(connector: Connector) -> str | None:
    """Why the connector's pipeline cannot take an ad-hoc incremental snapshot now; None when it can.

    The same rules as the engine's (connectors.mongodb.snapshots.incremental, connectors.postgres.incremental,
    connectors.mysql.incremental): a
    signal collection (table) the change stream sees; the engine checks a signal table itself when it takes the
    request (and when the pipeline starts).
    """
    if connector.source not in INCREMENTAL_SOURCES:
        return f"ad-hoc incremental snapshots of {connector.get_source_display()} connectors are not available"
    try:
        config = engine_config(connector)
    except ConfigError as error:
        return f"the stored configuration is invalid: {error}"
    if not config.signal_data_collection:
        if connector.source == SourceKind.POSTGRES:
            return ("incremental snapshots need signal.data.collection: a signal table (<schema>.<table> with "
                    "columns id, type, data, in the publication) the connector writes its watermarks to; set it "
                    "in the connector's configuration")
        if connector.source != SourceKind.MONGODB:
            return ("incremental snapshots need signal.data.collection: a signal table (<database>.<table> with "
                    "columns id, type, data) the connector may INSERT its watermarks into; set it in the "
                    "connector's configuration")
        return ("incremental snapshots need signal.data.collection (a <database>.<collection> the connector may "
                "write its watermarks to); set it in the connector's configuration")
    if connector.source == SourceKind.MONGODB:
        unseen = _unwatched_signal_collection(config)
        if unseen:
            return unseen
    if connector.desired_state != DesiredState.RUNNING:
        return f"{connector.name} is {connector.desired_state}: a snapshot runs inside a running pipeline; resume it"
    return None


def _unwatched_signal_collection(config) -> str | None:
    signal = Namespace.parse(config.signal_data_collection)
    target = watch_target(config)
    if (target.scope is CaptureScope.DATABASE and target.database != signal.db) or (
            target.scope is CaptureScope.COLLECTION and (target.database, target.collection) != (signal.db,
                                                                                                signal.collection)):
        watched = target.database + (f".{target.collection}" if target.collection else "")
        return (f"incremental snapshots need the change stream to see {signal} (its watermarks come back through "
                f"it), but the connector watches only {watched}")
    return None


def request_snapshot(connector: Connector, collections: list[str], query: str = "", *, user,
                     source: str) -> SnapshotRequest:
    """Asks for an ad-hoc incremental snapshot of `collections` (optionally only documents matching `query`).
    Raises Refused (nothing recorded) when the pipeline could not serve it."""
    refusal = snapshot_refusal(connector)
    if refusal:
        raise Refused(refusal)
    with transaction.atomic():
        request = SnapshotRequest.objects.create(
            connector=connector, collections=list(collections), filter=query or "",
            requested_by=user if getattr(user, "is_authenticated", False) else None,
        )
        audit.record(user, source, "connector.snapshot", _target(connector), None,
                     {"request": request.pk, "collections": list(collections), "filter": query or None})
        payload = {"request_id": request.pk, "collections": list(collections), "filter": query or None,
                   "config_version": config_version(connector)}
        _notify_on_commit(connector.name, "snapshot", payload)
    return request


# Debezium's stop-snapshot, pause-snapshot and resume-snapshot signals, sent to the running pipelines as control
# commands (workers.managed hands them to the engine's IncrementalSnapshots).
SNAPSHOT_SIGNALS = {"stop": "snapshot-stop", "pause": "snapshot-pause", "resume": "snapshot-resume"}


def request_snapshot_signal(connector: Connector, signal: str, collections: list[str] | None = None, *, user,
                            source: str) -> ControlRequest:
    """Stops, pauses or resumes the pipelines' incremental snapshot (stop: only `collections` when given). The
    pipeline answers the ControlRequest: done when it had an incremental snapshot to act on, failed otherwise."""
    command = SNAPSHOT_SIGNALS[signal]
    if connector.source not in INCREMENTAL_SOURCES:
        raise Refused(f"{connector.get_source_display()} connectors take no incremental snapshots")
    if connector.desired_state != DesiredState.RUNNING:
        raise Refused(f"{connector.name} is {connector.desired_state}: an incremental snapshot runs inside a running "
                      "pipeline, and a paused snapshot stays paused until it is resumed")
    with transaction.atomic():
        request = ControlRequest.objects.create(connector=connector, command=command, requested_by=_user(user))
        payload = {"request_id": request.pk}
        if collections:
            payload["collections"] = list(collections)
        audit.record(user, source, f"connector.{command}", _target(connector), None,
                     {"request": request.pk, "collections": list(collections) if collections else None})
        transaction.on_commit(lambda: control.notify(connector.name, command, payload,
                                                     on_sent=lambda receivers: _unheard(request, receivers)))
    return request


def _unheard(request: ControlRequest, receivers: int | None) -> None:
    """Logs the sending; a snapshot signal no pipeline heard ends failed (no supervisor applies it later)."""
    record_activity(request.connector.name, "", ActivityKind.SENT, sent_text(request.command, receivers))
    if not receivers:
        finish_request(request.pk, RequestStatus.FAILED,
                       "no pipeline of the connector was listening: only a running pipeline acts on it"
                       if receivers == 0 else "not sent: Redis is unreachable")


LOG_LEVEL_COMMAND = "log-level"


def request_log_level(connector: Connector, level: str, *, user, source: str) -> ControlRequest:
    """Sets the log level of the connector's running pipelines (their connectors.* and workers.* loggers, in the
    pipeline's own process); not stored: a pipeline started later logs at the configured level."""
    if connector.desired_state != DesiredState.RUNNING:
        raise Refused(f"{connector.name} is {connector.desired_state}: a log level applies to running pipelines")
    with transaction.atomic():
        request = ControlRequest.objects.create(connector=connector, command=LOG_LEVEL_COMMAND,
                                                requested_by=_user(user))
        audit.record(user, source, "connector.log_level", _target(connector), None,
                     {"request": request.pk, "level": level})
        payload = {"request_id": request.pk, "level": level}
        transaction.on_commit(lambda: control.notify(connector.name, LOG_LEVEL_COMMAND, payload,
                                                     on_sent=lambda receivers: _unheard(request, receivers)))
    return request


# --- observed state (called by the worker side) ---------------------------------------------------------------------

def report_observed(connector_name: str, replica_set: str, *, worker: str, phase: str | None,
                    metrics: dict | None = None, error: str | None = None,
                    lease: str | None = None) -> ReplicaSetState | None:
    """Stores what a worker reports about one pipeline. None when the connector was deleted meanwhile. `phase`
    None (a pipeline starting) keeps the stored phase, and stores nothing before a pipeline's first phase.

    `lease` is the value of the lease the reporting pipeline runs (or ran) under. While another pipeline holds the
    partition's lease, the report is stale (a worker frozen past its lease, fenced since): it changes nothing, and
    a phase change or error it carries goes only to the activity log, marked as not stored."""
    now = timezone.now()
    connector = Connector.objects.filter(name=connector_name).first()
    if connector is None:
        return None
    successor = _lease_successor(connector_name, replica_set, lease)
    if successor is not None:
        return _record_superseded(connector, replica_set, worker, successor, phase, error, now)
    if phase is None:
        stored = ReplicaSetState.objects.filter(connector=connector, replica_set=replica_set).first()
        if stored is None:
            return None
        phase = stored.phase
    phase = Phase(phase)
    try:
        state, created = ReplicaSetState.objects.get_or_create(
            connector=connector, replica_set=replica_set, defaults={"since": now, "phase": phase}
        )
    except IntegrityError:  # another report created it at the same moment
        state, created = ReplicaSetState.objects.get(connector=connector, replica_set=replica_set), False
    changed = created or state.phase != phase
    before, previous_error = (None if created else state.phase), state.last_error
    if not created and state.phase != phase:
        state.since = now
    state.phase, state.worker, state.heartbeat_at = phase, worker, now
    if metrics is not None:
        state.metrics = metrics
    if error is not None:  # kept after recovery: it is the *last* error (current_error tells whether it still is)
        state.last_error, state.last_error_at = error, now
    state.save()
    if changed:
        moved = f"{before} → {phase.value}" if before else phase.value
        record_activity(connector, replica_set, ActivityKind.STATE, f"{moved} (on {worker})", worker=worker, at=now)
    if error and (changed or error != previous_error):
        record_activity(connector, replica_set, ActivityKind.ERROR, error, worker=worker, at=now)
    _settle_start_requests(connector, replica_set, phase, error)
    return state


def _lease_successor(connector_name: str, replica_set: str, lease: str | None) -> str | None:
    """The worker holding the partition's lease when it is not `lease`; None when `lease` is still held, no one
    holds it (a pipeline's last report comes after it released it), or Redis cannot tell."""
    if lease is None:
        return None
    try:
        held = control.current_lease(connector_name, replica_set)
    except redis.RedisError as error:
        log.warning("could not read the lease of %s/%s (%s); storing the report of its pipeline", connector_name,
                    replica_set, error)
        return None
    if held is None or held == lease:
        return None
    return held.split("|", 1)[0]


def _record_superseded(connector: Connector, replica_set: str, worker: str, successor: str, phase: str | None,
                       error: str | None, now) -> ReplicaSetState | None:
    stored = ReplicaSetState.objects.filter(connector=connector, replica_set=replica_set).first()
    if phase is not None and (error or stored is None or stored.phase != phase):
        said = Phase(phase).value + (f": {error}" if error else "")
        record_activity(connector, replica_set, ActivityKind.STATE,
                        f"{said} (on {worker}, which no longer holds {replica_set}: {successor} runs it; "
                        "not stored)", worker=worker, at=now)
    return stored


ACTIVITY_KEPT = 500  # entries per connector; older ones are deleted as new ones come


def record_activity(connector: Connector | str, replica_set: str, kind: str, text: str, *, worker: str = "",
                    at=None) -> None:
    """One line of a connector's activity log (web.connectors.activity); never raises for a deleted connector."""
    if isinstance(connector, str):
        connector = Connector.objects.filter(name=connector).first()
        if connector is None:
            return
    try:
        ActivityEntry.objects.create(connector=connector, replica_set=replica_set or "", kind=kind, text=text[:4000],
                                     worker=worker or "", at=at or timezone.now())
        mine = ActivityEntry.objects.filter(connector=connector)
        old = list(mine.order_by("-at", "-id").values_list("id", flat=True)[ACTIVITY_KEPT:])
        if old:
            mine.filter(id__in=old).delete()
    except IntegrityError:  # the connector was deleted meanwhile
        return


def _settle_start_requests(connector: Connector, replica_set: str, phase: Phase, error: str | None) -> None:
    """A resume ends when a pipeline of the connector reports that it runs, or that it failed to start."""
    pending = ControlRequest.objects.filter(connector=connector, command="resume", status=RequestStatus.REQUESTED)
    if phase in (Phase.SNAPSHOT, Phase.STREAMING):
        pending.update(status=RequestStatus.DONE, reason=f"{replica_set} is {phase.value}",
                       finished_at=timezone.now())
    elif phase == Phase.FAILED and error:
        pending.update(status=RequestStatus.FAILED, reason=f"{replica_set} failed to start: {error}",
                       finished_at=timezone.now())


def mark_snapshot(request_id: int, status: str, reason: str = "") -> bool:
    """Worker side: moves an ad-hoc snapshot request on (running, done, failed) with what happened. False if it no
    longer exists or already ended (a final state is never overwritten)."""
    status = SnapshotStatus(status)
    now = timezone.now()
    changes = {"status": status, "updated_at": now, "reason": reason}
    if status in (SnapshotStatus.DONE, SnapshotStatus.FAILED):
        changes["finished_at"] = now
    open_requests = SnapshotRequest.objects.filter(
        pk=request_id, status__in=(SnapshotStatus.REQUESTED, SnapshotStatus.RUNNING))
    return open_requests.update(**changes) == 1


def finish_request(request_id: int, status: str, reason: str) -> bool:
    """Worker/supervisor side: ends a ControlRequest (done or failed) with what happened. False if it no longer
    exists or already ended."""
    status = RequestStatus(status)
    return ControlRequest.objects.filter(pk=request_id, status=RequestStatus.REQUESTED).update(
        status=status, reason=reason, finished_at=timezone.now()) == 1


def pending_snapshots(connector_name: str) -> list[dict]:
    """The snapshot requests a pipeline starting now should take up (those asked for while none listened)."""
    requests = SnapshotRequest.objects.filter(connector__name=connector_name, status=SnapshotStatus.REQUESTED)
    return [{"request_id": r.pk, "collections": list(r.collections), "filter": r.filter or None}
            for r in requests.order_by("requested_at")]


# --- offsets -----------------------------------------------------------------------------------------------------

def running_pipelines(connector: Connector) -> dict[str, str]:
    try:
        return control.running_pipelines(connector.name)
    except redis.RedisError as error:
        raise Unavailable(f"cannot tell whether the pipeline runs: Redis is unreachable ({error})") from None


def read_offsets(connector: Connector) -> dict[str, OffsetRecord | PartitionOffset]:
    """The committed offset of each partition (MongoDB: OffsetRecord; other sources: PartitionOffset)."""
    try:
        store = offset_views.store_for(connector)
        if connector.source != SourceKind.MONGODB:
            return partition_offsets.read(store, engine_config(connector))
        return store.load(connector.name)
    except ConfigError as error:
        raise ServiceError(f"the stored configuration is invalid: {error}") from None
    except (OffsetStoreError, KafkaException) as error:
        raise Unavailable(f"cannot read offsets from Kafka: {error}") from None


def partition_names(connector: Connector) -> list[str]:
    """The partitions a relational connector's configuration names (known without running it)."""
    try:
        return sorted(partition_offsets.partition_sources(engine_config(connector)))
    except ConfigError as error:
        raise ServiceError(f"the stored configuration is invalid: {error}") from None


def partition_key_field(record: OffsetRecord | None) -> str:
    """The field a reset keys its record by: the one the pipeline's own record has (`server_id` for a sharded
    cluster read through mongos), else a replica set's `rs`."""
    return record.key_field if record is not None else REPLICA_SET_KEY


def known_replica_sets(connector: Connector, offsets: dict[str, Any]) -> list[str]:
    observed = connector.replica_sets.exclude(replica_set=UNKNOWN_REPLICA_SET).values_list("replica_set", flat=True)
    return sorted(set(offsets) | set(observed))


def ensure_stopped(connector: Connector, *, stop: bool, user, source: str) -> None:
    """Raises PipelineRunning unless the pipeline is stopped (or paused) and holds no lease; with stop=True it is
    stopped first and this waits up to CDC_STOP_WAIT_SECONDS for its final commit."""
    running = running_pipelines(connector)
    if connector.desired_state != DesiredState.RUNNING and not running:
        return
    if not stop:
        where = ", ".join(f"{rs} on {worker}" for rs, worker in sorted(running.items())) or "desired state running"
        raise PipelineRunning(
            f"the pipeline of {connector.name} is running ({where}) and must be stopped first", running
        )
    if connector.desired_state != DesiredState.STOPPED:
        request_state(connector, DesiredState.STOPPED, user=user, source=source)
    elif running:
        control.notify(connector.name, "stop")
    try:
        stopped = control.wait_until_stopped(connector.name, settings.CDC_STOP_WAIT_SECONDS)
    except redis.RedisError as error:
        raise Unavailable(f"cannot tell whether the pipeline stopped: Redis is unreachable ({error})") from None
    if not stopped:
        raise PipelineRunning(
            f"asked {connector.name} to stop, but it still runs after {settings.CDC_STOP_WAIT_SECONDS:g}s; retry",
            running_pipelines(connector), stoppable=False,
        )


def reset_offsets(connector: Connector, mode: str, *, user, source: str, replica_sets: list[str] | None = None,
                  timestamp: Timestamp | None = None, token: dict | None = None,
                  stop: bool = False) -> list[OffsetRecord | OffsetTombstone]:
    """Writes a reset for each replica set (default: every one known), obeyed at the pipeline's next start.

    mode: latest | timestamp (needs `timestamp`) | token (needs `token`) | snapshot | initial (delete the offset).
    """
    if connector.source != SourceKind.MONGODB:
        return _reset_partition_offsets(connector, mode, user=user, source=source, partitions=replica_sets,
                                        stop=stop)
    if mode not in offset_views.RESET_MODES:
        raise ServiceError(f"unknown reset mode {mode!r}; use one of {', '.join(offset_views.RESET_MODES)}")
    if mode == "timestamp" and timestamp is None:
        raise ServiceError("mode=timestamp needs a timestamp")
    if mode == "token" and not token:
        raise ServiceError("mode=token needs a resume token")
    if mode == "token" and (problem := offset_views.resume_token_problem(token)):
        raise ServiceError(problem)
    known = known_replica_sets(connector, read_offsets(connector))
    unknown = sorted(set(replica_sets or ()) - set(known))
    if known and unknown:  # checked before anything is stopped
        raise ServiceError(f"{connector.name} has no replica set {', '.join(repr(rs) for rs in unknown)}; known: "
                           f"{', '.join(known)}")
    ensure_stopped(connector, stop=stop, user=user, source=source)
    current = read_offsets(connector)
    targets = list(replica_sets or known_replica_sets(connector, current))
    if not targets:
        raise ServiceError(
            f"no replica set of {connector.name} is known yet (no offset, never ran); name one with replica_set"
        )
    try:
        fields = offset_keys.key_fields(engine_config(connector), current, targets)
    except ConfigError as error:
        raise ServiceError(f"the stored configuration is invalid: {error}") from None
    except offset_keys.KeyUnknown as error:
        raise Unavailable(f"{connector.name} has no offset yet and MongoDB could not be asked whether it is a "
                          f"sharded cluster, so the reset's key is unknown: {error}") from None
    store = offset_views.store_for(connector)
    requested_by = user.get_username() if getattr(user, "is_authenticated", False) else source
    written: list[OffsetRecord | OffsetTombstone] = []
    try:
        for rs in targets:
            key_field = fields[rs]
            if mode == "latest":
                written.append(store.reset_to_latest(connector.name, rs, requested_by, key_field=key_field))
            elif mode == "timestamp":
                written.append(store.reset_to_timestamp(connector.name, rs, timestamp, requested_by,
                                                        key_field=key_field))
            elif mode == "token":
                written.append(store.reset_to_token(connector.name, rs, token, requested_by, key_field=key_field))
            elif mode == "snapshot":
                written.append(store.request_resnapshot(connector.name, rs, requested_by, key_field=key_field))
            else:
                store.delete(connector.name, rs, key_field=key_field)
                written.append(OffsetTombstone(connector.name, rs, key_field))
    except (OffsetStoreError, KafkaException) as error:
        raise Unavailable(f"writing the reset to Kafka failed: {error}") from None
    _audit_offsets(connector, f"offsets.reset.{mode}", current, written, user=user, source=source)
    return written


def _reset_partition_offsets(connector: Connector, mode: str, *, user, source: str, partitions: list[str] | None,
                             stop: bool) -> list[PartitionOffset]:
    if mode not in partition_offsets.RESET_MODES:
        raise NotForThisSource(
            f"offset reset mode {mode!r} applies to MongoDB connectors; a {connector.get_source_display()} "
            f"connector resets to {', '.join(partition_offsets.RESET_MODES)} (docs/offsets.md)")
    known = partition_names(connector)
    unknown = sorted(set(partitions or ()) - set(known))
    if unknown:
        raise ServiceError(f"{connector.name} has no partition {', '.join(repr(p) for p in unknown)}; its "
                           f"partitions: {', '.join(known)}")
    ensure_stopped(connector, stop=stop, user=user, source=source)
    current = read_offsets(connector)
    requested_by = user.get_username() if getattr(user, "is_authenticated", False) else source
    try:
        written = partition_offsets.reset(offset_views.store_for(connector), engine_config(connector), mode,
                                          list(partitions or known), requested_by)
    except (OffsetStoreError, KafkaException) as error:
        raise Unavailable(f"writing the reset to Kafka failed: {error}") from None
    _audit_offsets(connector, f"offsets.reset.{mode}", current, written, user=user, source=source)
    return written


def alter_offsets(connector: Connector, records: list[OffsetRecord | OffsetTombstone], *, user,
                  source: str) -> None:
    """Writes the given offset records as they are (Kafka Connect PATCH/DELETE offsets; MongoDB's layout)."""
    if connector.source != SourceKind.MONGODB:
        raise NotForThisSource(f"offsets of {connector.get_source_display()} connectors are changed with a reset "
                               f"({', '.join(partition_offsets.RESET_MODES)}), not written as given")
    ensure_stopped(connector, stop=False, user=user, source=source)
    current = read_offsets(connector)
    store = offset_views.store_for(connector)
    try:
        for record in records:
            store.write(record)
    except (OffsetStoreError, KafkaException) as error:
        raise Unavailable(f"writing offsets to Kafka failed: {error}") from None
    _audit_offsets(connector, "offsets.alter", current, records, user=user, source=source)


def _audit_offsets(connector, action, current, written, *, user, source) -> None:
    touched = [record.replica_set for record in written]
    before = {rs: offset_views.describe(current[rs]) if rs in current else None for rs in touched}
    after = {
        record.replica_set: offset_views.describe(record)
        if isinstance(record, OffsetRecord) or getattr(record, "value", None) is not None else None
        for record in written
    }
    audit.record(user, source, action, _target(connector), before, after)
