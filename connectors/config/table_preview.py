"""Which of a source's tables a configuration's include/exclude lists capture (the connector form's preview).

The tables are listed by connecting with the configuration's own credentials, in a child process bounded like a
connectivity check (connectors/config/preflight_process.py: killed at its deadline, capped, no inherited
environment, the properties on standard input). The matching is the connector's own: PostgreSQL's `TableFilter`,
MySQL/MariaDB's `captures_table`, MongoDB's `NamespaceFilter`, so the preview cannot disagree with what is captured.

`python -m connectors tables --timeout-ms N` is the child: a property map as JSON on stdin, on stdout
{"tables": [[name, captured], …]} or {"error": sentence}.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Mapping
from typing import Any

from connectors import ConnectorError, UnknownConnectorClass
from connectors.config import preflight_process
from connectors.config.types import ConfigError

LISTED_AT_MOST = 2000  # names a preview returns; the count says how many there were


class PreviewFailed(Exception):
    """The tables could not be listed; the message says why, for a person."""


def run(properties: Mapping[str, Any], timeout_ms: int) -> dict[str, Any]:
    """{"tables": [{"name", "captured"}], "total", "captured"} for `properties`, listed in a child process killed
    after `timeout_ms` plus its start-up time. Raises PreviewFailed."""
    environment = {name: os.environ[name] for name in preflight_process.INHERITED if name in os.environ}
    environment["PYTHONPATH"] = str(preflight_process.PROJECT_ROOT)
    limit_s = timeout_ms / 1000 + preflight_process.STARTUP_ALLOWANCE_S
    child = subprocess.Popen(  # noqa: S603 - our own interpreter and module, no shell
        [sys.executable, "-m", "connectors", "tables", "--timeout-ms", str(int(timeout_ms))],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        cwd=preflight_process.PROJECT_ROOT, env=environment, start_new_session=True,
        preexec_fn=lambda: preflight_process.limit_child(limit_s),  # noqa: PLW1509
    )
    try:
        output, _ = child.communicate(json.dumps(dict(properties), default=str).encode(), timeout=limit_s)
    except subprocess.TimeoutExpired:
        preflight_process.kill(child)
        raise PreviewFailed(f"the source did not list its tables within {timeout_ms / 1000:g} s") from None
    try:
        answer = json.loads(output)
    except (ValueError, TypeError):
        raise PreviewFailed("listing the tables failed before it could tell why (the process ended with status "
                            f"{child.returncode})") from None
    if answer.get("error"):
        raise PreviewFailed(answer["error"])
    listed = answer.get("tables") or []
    captured = [name for name, taken in listed if taken]
    return {"tables": [{"name": name, "captured": bool(taken)} for name, taken in listed[:LISTED_AT_MOST]],
            "total": len(listed), "captured": len(captured)}


def serve(timeout_ms: int) -> int:
    """The child's side: read the properties, list and match, write the answer."""
    threading.stack_size(preflight_process.THREAD_STACK_BYTES)
    properties = json.load(sys.stdin)
    try:
        answer = {"tables": matched(properties, timeout_ms)}
    except (ConnectorError, ConfigError, UnknownConnectorClass, ValueError) as error:
        answer = {"error": str(error).strip().splitlines()[-1] if str(error).strip() else type(error).__name__}
    json.dump(answer, sys.stdout)
    sys.stdout.flush()
    os._exit(0)  # drivers' monitor threads may still be waiting on a socket: do not wait for them


def matched(properties: Mapping[str, Any], timeout_ms: int) -> list[tuple[str, bool]]:
    """[(name, captured)] of every table (collection) of the source, sorted by name."""
    from connectors.sources import MARIADB, MYSQL, POSTGRES, engine_config

    kind, config = engine_config(dict(properties))
    if kind == POSTGRES:
        return _postgres(config, timeout_ms)
    if kind in (MYSQL, MARIADB):
        return _mysql(config, timeout_ms)
    return _mongodb(config, timeout_ms)


def _postgres(config, timeout_ms: int) -> list[tuple[str, bool]]:
    import psycopg

    from connectors.postgres.events import TableFilter
    from connectors.postgres.publication import user_tables

    captured = TableFilter(config)
    try:
        with psycopg.connect(config.dsn(), autocommit=True, connect_timeout=max(1, timeout_ms // 1000),
                             options=f"-c statement_timeout={int(timeout_ms)}") as connection:
            with connection.cursor() as cursor:
                tables = user_tables(cursor)
    except psycopg.Error as error:
        raise ConnectorError(f"PostgreSQL at {config.hostname}:{config.port}: {_last_line(error)}") from None
    return [(f"{schema}.{table}", captured(schema, table)) for schema, table in tables]


def _mysql(config, timeout_ms: int) -> list[tuple[str, bool]]:
    import dataclasses

    from connectors.mysql import catalog
    from connectors.mysql.connection import connect

    seconds = max(1.0, timeout_ms / 1000)
    settings = dataclasses.replace(config.connection, connect_timeout=seconds)
    connection = connect(settings, read_timeout=seconds)
    try:
        tables = catalog.base_tables(connection)
    finally:
        connection.close()
    return [(f"{db}.{table}", config.captures_table(db, table)) for db, table in tables]


def _mongodb(config, timeout_ms: int) -> list[tuple[str, bool]]:
    import pymongo
    import pymongo.errors

    from connectors.mongodb.filters import NamespaceFilter
    from connectors.mongodb.records import Namespace

    captured = NamespaceFilter.from_config(config)
    options = {**config.mongo_client_options(), "serverSelectionTimeoutMS": timeout_ms,
               "connectTimeoutMS": timeout_ms, "socketTimeoutMS": timeout_ms}
    client = pymongo.MongoClient(**options)
    try:
        names = []
        for database in client.list_database_names():
            if database in ("admin", "local", "config"):
                continue
            names += [f"{database}.{name}" for name in client[database].list_collection_names()
                      if not name.startswith("system.")]
    except pymongo.errors.PyMongoError as error:
        raise ConnectorError(f"MongoDB: {error}") from None
    finally:
        client.close()
    return [(name, captured.includes(Namespace.parse(name))) for name in sorted(names)]


def _last_line(error: Exception) -> str:
    text = str(error).strip()
    return text.splitlines()[-1].rsplit(" failed: ", 1)[-1].removeprefix("FATAL:").strip() if text else \
        type(error).__name__
