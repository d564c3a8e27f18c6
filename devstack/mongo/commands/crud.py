"""Write commands: insert, update, delete, findAndModify."""

from __future__ import annotations

from contextlib import contextmanager, nullcontext

from devstack.mongo.bsonutil import COLLATION, MISSING, collation_normalizer, to_int, truthy, type_name
from devstack.mongo.commands import command
from devstack.mongo.errors import CommandError, WriteError
from devstack.mongo.storage import validate_collection_name
from devstack.mongo.writes import limit_of


def _coll_name(ctx) -> str:
    name = ctx.target
    if not isinstance(name, str):
        raise CommandError(73, f"collection name has invalid type {type_name(name)}")
    validate_collection_name(ctx.db, name)
    return name


def _batch(ctx, field):
    items = ctx.cmd.get(field)
    if not isinstance(items, list):
        raise CommandError(40414, f"BSON field '{ctx.name}.{field}' is missing but a required field",
                           code_name_override="Location40414")
    if not items or len(items) > 100000:
        raise CommandError(10, f"Write batch sizes must be between 1 and 100000. Got {len(items)} operations.",
                           code_name_override="InvalidLength")
    return items


@contextmanager
def _collation(norm):
    token = COLLATION.set(norm)
    try:
        yield
    finally:
        COLLATION.reset(token)


def _statement_collation(stmt):
    """A statement's own collation (update/delete statements each carry one)."""
    norm = collation_normalizer(stmt.get("collation")) if isinstance(stmt, dict) and "collation" in stmt else None
    return _collation(norm) if norm is not None else nullcontext()


def _ordered(ctx) -> bool:
    v = ctx.cmd.get("ordered", True)
    return v is not False


def _finish(ctx, reply: dict, writer) -> dict:
    ctx.op_ts = writer.last_ts
    if ctx.txn is None and not ctx.rs.standalone:
        reply["electionId"] = ctx.rs.election_id
        reply["opTime"] = ctx.rs.op_time(writer.last_ts)
    return reply


def _txn_error(ctx, err):
    """Inside a transaction a WriteConflict fails the whole command (and transaction), not one statement."""
    if ctx.txn is not None and err.code == 112:
        raise CommandError(112, err.errmsg, labels=["TransientTransactionError"])


def _stmt(writer, ctx, index):
    ids = ctx.cmd.get("stmtIds")
    writer.stmt = int(ids[index]) if isinstance(ids, list) and index < len(ids) else \
        int(ctx.cmd.get("stmtId", 0)) + index


@command("insert", kind="write", txn=True, retryable_write=True)
def insert(ctx):
    name = _coll_name(ctx)
    docs = _batch(ctx, "documents")
    ordered = _ordered(ctx)
    writer = ctx.writer()
    errors = []
    n = 0
    coll = writer.collection(name, create=True)
    for i, doc in enumerate(docs):
        _stmt(writer, ctx, i)
        try:
            writer.insert_one(coll, doc)
            n += 1
        except WriteError as err:
            _txn_error(ctx, err)
            errors.append(err.to_entry(i))
            if ordered:
                break
        except CommandError as err:
            _txn_error(ctx, err)
            errors.append(WriteError(err.code, err.errmsg, err.extra).to_entry(i))
            if ordered:
                break
    reply = {"n": n}
    if errors:
        reply["writeErrors"] = errors
    return _finish(ctx, reply, writer)


@command("update", kind="write", txn=True, retryable_write=True)
def update(ctx):
    name = _coll_name(ctx)
    stmts = _batch(ctx, "updates")
    ordered = _ordered(ctx)
    writer = ctx.writer()
    n = modified = 0
    upserted = []
    errors = []
    for i, stmt in enumerate(stmts):
        _stmt(writer, ctx, i)
        try:
            if not isinstance(stmt, dict) or "q" not in stmt or "u" not in stmt:
                missing = "q" if not isinstance(stmt, dict) or "q" not in stmt else "u"
                raise CommandError(40414, f"BSON field 'update.updates.{missing}' is missing but a required field",
                                   code_name_override="Location40414")
            for key in stmt:
                if key not in ("q", "u", "upsert", "multi", "arrayFilters", "hint", "collation", "c",
                               "upsertSupplied"):
                    raise CommandError(40415, f"BSON field 'update.updates.{key}' is an unknown field.",
                                       code_name_override="Location40415")
            multi = truthy(stmt.get("multi", False))
            upsert = truthy(stmt.get("upsert", False))
            with _statement_collation(stmt):
                matched, mod, up_id = writer.update_statement(
                    name, stmt["q"], stmt["u"], multi=multi, upsert=upsert, array_filters=stmt.get("arrayFilters"),
                    hint=stmt.get("hint"))
            n += matched
            modified += mod
            if up_id is not MISSING:
                upserted.append({"index": i, "_id": up_id})
        except (WriteError, CommandError) as err:
            if isinstance(err, CommandError) and err.code in (40414, 40415):
                raise
            _txn_error(ctx, err)
            errors.append(WriteError(err.code, err.errmsg, err.extra).to_entry(i))
            if ordered:
                break
    reply: dict = {"n": n}
    if upserted:
        reply["upserted"] = upserted
    reply["nModified"] = modified
    if errors:
        reply["writeErrors"] = errors
    return _finish(ctx, reply, writer)


@command("delete", kind="write", txn=True, retryable_write=True)
def delete(ctx):
    name = _coll_name(ctx)
    stmts = _batch(ctx, "deletes")
    ordered = _ordered(ctx)
    writer = ctx.writer()
    n = 0
    errors = []
    for i, stmt in enumerate(stmts):
        _stmt(writer, ctx, i)
        try:
            if not isinstance(stmt, dict) or "q" not in stmt:
                raise CommandError(40414, "BSON field 'delete.deletes.q' is missing but a required field",
                                   code_name_override="Location40414")
            with _statement_collation(stmt):
                n += writer.delete_statement(name, stmt["q"], limit_of(stmt), hint=stmt.get("hint"))
        except (WriteError, CommandError) as err:
            if isinstance(err, CommandError) and err.code == 40414:
                raise
            _txn_error(ctx, err)
            errors.append(WriteError(err.code, err.errmsg, err.extra).to_entry(i))
            if ordered:
                break
    reply: dict = {"n": n}
    if errors:
        reply["writeErrors"] = errors
    return _finish(ctx, reply, writer)


@command("findAndModify", kind="write", txn=True, retryable_write=True, aliases=("findandmodify",))
def find_and_modify(ctx):
    name = _coll_name(ctx)
    cmd = ctx.cmd
    remove = truthy(cmd.get("remove", False))
    update = cmd.get("update")
    new = truthy(cmd.get("new", False))
    upsert = truthy(cmd.get("upsert", False))
    if remove and update is not None:
        raise CommandError(9, "Cannot specify both an update and remove=true")
    if not remove and update is None:
        raise CommandError(9, "Either an update or remove=true must be specified")
    if remove and new:
        raise CommandError(9, "Cannot specify both new=true and remove=true; 'remove' always returns the deleted "
                              "document")
    if remove and upsert:
        raise CommandError(9, "Cannot specify both upsert=true and remove=true ")
    query = cmd.get("query") or {}
    if not isinstance(query, dict):
        raise CommandError(14, f"BSON field 'findAndModify.query' is the wrong type '{type_name(query)}', expected "
                               "type 'object'")
    writer = ctx.writer()
    _stmt(writer, ctx, 0)
    try:
        value, last_error = writer.find_and_modify(
            name, query, sort=cmd.get("sort"), remove=remove, update=update, new=new, fields=cmd.get("fields"),
            upsert=upsert, array_filters=cmd.get("arrayFilters"), hint=cmd.get("hint"))
    except WriteError as err:
        raise err.as_command_error() from None
    ctx.op_ts = writer.last_ts
    reply = {"lastErrorObject": last_error, "value": value}
    return reply


def batch_size(v):
    n = to_int(v)
    return n
