"""Does this server and this user give a binlog source what it needs? Each finding says how to fix it.

`collect_facts` reads the server (variables, version, the user's grants); `evaluate` judges facts alone, so the
rules are testable on captured server answers; `check_source` does both for connection settings.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pymysql

from connectors import ConnectorError
from connectors.mysql.connection import ConnectionSettings, connect

_RESTART_HINT = "in the server's configuration file and restart it"


@dataclass(frozen=True)
class CheckResult:
    name: str
    ok: bool
    detail: str
    fix: str = ""

    def message(self) -> str:
        return self.detail if self.ok else f"{self.detail}. Fix: {self.fix}"


@dataclass(frozen=True)
class SourceFacts:
    version: str
    variables: dict[str, str]  # global variables, names lower-case
    grants: tuple[str, ...]  # SHOW GRANTS lines of the connected user
    user: str

    @property
    def mariadb(self) -> bool:
        return "mariadb" in self.version.lower()


def collect_facts(connection) -> SourceFacts:
    with connection.cursor() as cursor:
        cursor.execute(
            "SHOW GLOBAL VARIABLES WHERE Variable_name IN ('log_bin', 'binlog_format', 'binlog_row_image', "
            "'binlog_row_metadata', 'server_id', 'gtid_mode', 'gtid_strict_mode', 'version')"
        )
        variables = {name.lower(): str(value) for name, value in cursor.fetchall()}
        cursor.execute("SHOW GRANTS")
        grants = tuple(row[0] for row in cursor.fetchall())
        cursor.execute("SELECT CURRENT_USER()")
        user = cursor.fetchone()[0]
    return SourceFacts(version=variables.get("version", connection.get_server_info()), variables=variables,
                       grants=grants, user=user)


def evaluate(facts: SourceFacts, locking_mode: str = "minimal") -> list[CheckResult]:
    return [
        _log_bin(facts),
        _variable(facts, "binlog_format", "ROW"),
        _variable(facts, "binlog_row_image", "FULL"),
        _row_metadata(facts),
        *_privileges(facts, locking_mode),
    ]


def check_source(settings: ConnectionSettings, locking_mode: str = "minimal") -> list[CheckResult]:
    """Connect and judge; a connection that fails is one failed result (with its fix), not an exception."""
    try:
        connection = connect(settings)
    except ConnectorError as error:
        return [CheckResult("connection", False, str(error),
                            "check database.hostname, database.port, database.user and database.password")]
    try:
        facts = collect_facts(connection)
    except pymysql.err.MySQLError as error:
        return [CheckResult("connection", False, f"reading the server's settings failed: {error}",
                            "grant the user access to SHOW GLOBAL VARIABLES and SHOW GRANTS")]
    finally:
        connection.close()
    return [CheckResult("connection", True, f"connected to {facts.version} as {facts.user}"),
            *evaluate(facts, locking_mode)]


def failures(results: list[CheckResult]) -> list[CheckResult]:
    return [r for r in results if not r.ok]


def _log_bin(facts: SourceFacts) -> CheckResult:
    if facts.variables.get("log_bin", "").upper() in ("ON", "1"):
        return CheckResult("log_bin", True, "binary logging is on")
    return CheckResult(
        "log_bin", False, "binary logging is off (log_bin=OFF), so there are no changes to read",
        f"set log_bin (e.g. log_bin=mysql-bin) and a non-zero server_id {_RESTART_HINT}",
    )


def _variable(facts: SourceFacts, name: str, wanted: str) -> CheckResult:
    value = facts.variables.get(name)
    if value is not None and value.upper() == wanted:
        return CheckResult(name, True, f"{name}={value}")
    return CheckResult(
        name, False, f"{name} is {value!r}, the connector needs {wanted}",
        f"set {name}={wanted} {_RESTART_HINT} (SET GLOBAL {name}='{wanted}' applies to new sessions only)",
    )


def _row_metadata(facts: SourceFacts) -> CheckResult:
    if "binlog_row_metadata" not in facts.variables:
        return CheckResult(
            "binlog_row_metadata", False,
            f"{facts.version} has no binlog_row_metadata, so the binlog does not name the columns",
            "upgrade to MariaDB 10.5 or MySQL 8.0.14 or later and set binlog_row_metadata=FULL",
        )
    return _variable(facts, "binlog_row_metadata", "FULL")


# MariaDB 10.5+ renamed REPLICATION CLIENT to BINLOG MONITOR (SHOW GRANTS prints the new name)
_SYNONYMS = {"REPLICATION CLIENT": ("REPLICATION CLIENT", "BINLOG MONITOR")}
_GRANT = re.compile(r"^GRANT (?P<privileges>.+?) ON (?P<on>\S+) TO ", re.IGNORECASE)


def granted_privileges(grants: tuple[str, ...]) -> dict[str, set[str]]:
    """Privilege -> the objects it is granted on (`*.*`, `` `db`.* ``), from SHOW GRANTS lines."""
    found: dict[str, set[str]] = {}
    for line in grants:
        match = _GRANT.match(line)
        if not match:
            continue  # role grants, proxies
        privileges = re.sub(r"\([^)]*\)", "", match["privileges"])  # column lists: SELECT (a, b)
        for privilege in privileges.split(","):
            found.setdefault(" ".join(privilege.upper().split()), set()).add(match["on"])
    return found


def _has_global(privileges: dict[str, set[str]], name: str) -> bool:
    if "*.*" in privileges.get("ALL PRIVILEGES", set()) or "*.*" in privileges.get("ALL", set()):
        return True
    return any("*.*" in privileges.get(alias, set()) for alias in _SYNONYMS.get(name, (name,)))


def _privileges(facts: SourceFacts, locking_mode: str) -> list[CheckResult]:
    privileges = granted_privileges(facts.grants)
    grant_to = f"GRANT ... ON *.* TO {facts.user}"
    results = []
    for name, why in (("REPLICATION SLAVE", "to read the binlog as a replica"),
                      ("REPLICATION CLIENT", "to read the binlog position (SHOW MASTER/BINARY LOG STATUS)")):
        if _has_global(privileges, name):
            results.append(CheckResult(f"privilege {name}", True, f"{facts.user} has {name}"))
        else:
            results.append(CheckResult(f"privilege {name}", False, f"{facts.user} lacks {name}, needed {why}",
                                       grant_to.replace("...", name)))
    if _has_global(privileges, "SELECT"):
        results.append(CheckResult("privilege SELECT", True, f"{facts.user} has SELECT on *.*"))
    elif privileges.get("SELECT"):
        on = ", ".join(sorted(privileges["SELECT"]))
        results.append(CheckResult("privilege SELECT", True, f"{facts.user} has SELECT on {on} only; "
                                   "tables elsewhere cannot be snapshotted"))
    else:
        results.append(CheckResult("privilege SELECT", False, f"{facts.user} lacks SELECT, needed for snapshots",
                                   grant_to.replace("...", "SELECT") + " (or on each captured database)"))
    if locking_mode == "none" or facts.mariadb:
        why = ("snapshot.locking.mode=none" if locking_mode == "none"
               else "MariaDB gives the snapshot position without a lock")
        results.append(CheckResult("privilege RELOAD or LOCK TABLES", True, f"not needed: {why}"))
    elif _has_global(privileges, "RELOAD") or _has_global(privileges, "LOCK TABLES"):
        results.append(CheckResult("privilege RELOAD or LOCK TABLES", True, f"{facts.user} may lock for snapshots"))
    else:
        results.append(CheckResult(
            "privilege RELOAD or LOCK TABLES", False,
            f"{facts.user} has neither RELOAD nor LOCK TABLES, needed by snapshot.locking.mode={locking_mode} "
            "to read a consistent snapshot position", grant_to.replace("...", "RELOAD, LOCK TABLES"),
        ))
    return results
