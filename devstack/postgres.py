"""A private PostgreSQL cluster for logical replication, from Debian's `postgresql` package.

The cluster is `initdb`'d once under `.devstack/postgres/data` and listens on 127.0.0.1:DEVSTACK_POSTGRES_PORT
and on a unix socket inside the data directory. Local (socket) connections are trusted; TCP connections need a
password: the `cdc` role (LOGIN REPLICATION, password generated into `.devstack/postgres/cdc.password`) is what
connectors use. PostgreSQL refuses to run as root, so when the stack runs as root the server runs as the
`postgres` OS user (the package creates it) through `setpriv`, which execs in place: the recorded pid is the
postmaster's own. POSTGRES_DSN names an existing server instead; then nothing is started.
"""

from __future__ import annotations

import glob
import os
import pwd
import re
import secrets
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

from devstack import settings
from devstack.process import ManagedProcess, StackError, port_in_use, wait_until

HOME = settings.POSTGRES_HOME
DATA = HOME / "data"
PASSWORD_FILE = HOME / "cdc.password"
OS_USER = "postgres"
CDC_ROLE = "cdc"
CDC_DATABASE = "cdc"
process = ManagedProcess("postgres")

# Written on every `up`, included from postgresql.conf; ALTER SYSTEM (postgresql.auto.conf) still wins.
CONFIG = """\
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = '{socket_dir}'
wal_level = logical
max_replication_slots = 32
max_wal_senders = 32
max_connections = 200
# a development cluster: a machine crash may lose it, a postgres crash (kill -9) loses nothing
fsync = off
logging_collector = off
log_min_messages = warning
"""


def uses_external_server() -> bool:
    return bool(os.environ.get("POSTGRES_DSN"))


def _version(bindir: str) -> tuple[int, ...]:
    match = re.search(r"/postgresql/([\d.]+)/bin", bindir)
    return tuple(int(p) for p in match.group(1).split(".")) if match else (0,)


def find_bindir() -> str | None:
    """DEVSTACK_POSTGRES_BINDIR, else the newest Debian /usr/lib/postgresql/<v>/bin, else `postgres` on PATH."""
    configured = os.environ.get("DEVSTACK_POSTGRES_BINDIR")
    if configured:
        return configured
    found = sorted((str(Path(p).parent) for p in glob.glob("/usr/lib/postgresql/*/bin/postgres")), key=_version)
    if found:
        return found[-1]
    on_path = shutil.which("postgres")
    return str(Path(on_path).resolve().parent) if on_path else None


def _bindir() -> str:
    bindir = find_bindir()
    if bindir and Path(bindir, "initdb").exists():
        return bindir
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise StackError(
            "PostgreSQL is not installed. Install it (Debian: sudo apt-get install postgresql) or point "
            "POSTGRES_DSN at an existing server."
        )
    print("installing postgresql with apt-get...", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=False, env=env, capture_output=True)
    result = subprocess.run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "postgresql"],
        env=env, capture_output=True, text=True,
    )
    bindir = find_bindir()
    if result.returncode != 0 or not bindir:
        raise StackError(f"apt-get install postgresql failed:\n{result.stderr[-2000:]}")
    return bindir


def _run_as() -> list[str]:
    """The argv prefix that runs a PostgreSQL binary as a non-root user (empty when we are not root)."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(OS_USER)
    except KeyError:
        raise StackError(
            f"running as root, and PostgreSQL refuses to run as root, but there is no '{OS_USER}' OS user to run it "
            f"as. Create one (adduser --system --group {OS_USER}) or run devstack as a regular user."
        ) from None
    return ["setpriv", f"--reuid={OS_USER}", f"--regid={OS_USER}", "--init-groups", "--"]


def _let_server_user_reach(path: Path) -> None:
    """As root, the server runs as another user, who must be able to pass through every parent directory of its
    data (a checkout under a private temporary directory, mode 700, is not): add search permission (o+x) where it
    is missing. Nothing is made readable."""
    if os.geteuid() != 0:
        return
    for directory in [path.resolve(), *path.resolve().parents]:
        mode = directory.stat().st_mode
        if not mode & stat.S_IXOTH:
            directory.chmod(stat.S_IMODE(mode) | stat.S_IXOTH)


def _chown_to_server_user(path: Path) -> None:
    if os.geteuid() == 0:
        user = pwd.getpwnam(OS_USER)
        os.chown(path, user.pw_uid, user.pw_gid)


def cdc_password() -> str:
    try:
        return PASSWORD_FILE.read_text().strip()
    except FileNotFoundError:
        HOME.mkdir(parents=True, exist_ok=True)
        password = secrets.token_urlsafe(18)
        PASSWORD_FILE.touch(mode=0o600)
        PASSWORD_FILE.write_text(password + "\n")
        return password


def admin_dsn() -> str:
    """The superuser over the unix socket (trusted): creates databases, tables, roles."""
    return f"host={DATA} port={settings.POSTGRES_PORT} user=postgres dbname=postgres"


def cdc_dsn(dbname: str = CDC_DATABASE) -> str:
    """The password-authenticated replication role over TCP, as a connector connects."""
    return (
        f"host=127.0.0.1 port={settings.POSTGRES_PORT} user={CDC_ROLE} password={cdc_password()} dbname={dbname}"
    )


def _initdb(bindir: str) -> None:
    if (DATA / "PG_VERSION").exists():
        return
    DATA.mkdir(parents=True, exist_ok=True)
    DATA.chmod(0o700)
    _chown_to_server_user(DATA)
    result = subprocess.run(
        [*_run_as(), f"{bindir}/initdb", "-D", str(DATA), "-U", "postgres", "-E", "UTF8", "--locale=C.UTF-8",
         "--auth-local=trust", "--auth-host=scram-sha-256", "--no-instructions"],
        capture_output=True, text=True, cwd="/",
    )
    if result.returncode != 0:
        shutil.rmtree(DATA, ignore_errors=True)
        hint = ""
        if "Permission denied" in result.stderr and os.geteuid() == 0:
            hint = f"\nThe '{OS_USER}' OS user must be able to reach {DATA}: every parent directory needs o+x."
        raise StackError(f"initdb failed:\n{(result.stdout + result.stderr)[-3000:]}{hint}")
    with open(DATA / "postgresql.conf", "a") as conf:
        conf.write("\ninclude_if_exists = 'devstack.conf'\n")


def _write_config() -> None:
    path = DATA / "devstack.conf"
    path.write_text(CONFIG.format(port=settings.POSTGRES_PORT, socket_dir=DATA))
    _chown_to_server_user(path)


def answers() -> bool:
    import psycopg2

    try:
        conn = psycopg2.connect(admin_dsn(), connect_timeout=2)
    except psycopg2.Error:
        return False
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1")
        return True
    finally:
        conn.close()


def _ensure_cdc_role() -> None:
    import psycopg2
    from psycopg2 import sql

    conn = psycopg2.connect(admin_dsn())
    conn.autocommit = True
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_roles WHERE rolname = %s", (CDC_ROLE,))
            verb = "ALTER" if cur.fetchone() else "CREATE"
            cur.execute(
                sql.SQL(verb + " ROLE {} LOGIN REPLICATION PASSWORD {}").format(
                    sql.Identifier(CDC_ROLE), sql.Literal(cdc_password())
                )
            )
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (CDC_DATABASE,))
            if not cur.fetchone():
                cur.execute(
                    sql.SQL("CREATE DATABASE {} OWNER {}").format(
                        sql.Identifier(CDC_DATABASE), sql.Identifier(CDC_ROLE)
                    )
                )
    finally:
        conn.close()


def endpoint() -> str:
    if uses_external_server():
        return "POSTGRES_DSN"
    return f"postgresql://{CDC_ROLE}@127.0.0.1:{settings.POSTGRES_PORT}/{CDC_DATABASE}"


def up() -> str:
    if uses_external_server():
        return "using POSTGRES_DSN (not started by devstack)"
    if process.is_running():
        wait_until(answers, 30, "PostgreSQL to accept connections", process)
        return "already running"
    if port_in_use(settings.POSTGRES_PORT):
        raise StackError(
            f"port {settings.POSTGRES_PORT} is taken by another program (a system PostgreSQL?). Stop it, choose "
            "another port with DEVSTACK_POSTGRES_PORT, or point POSTGRES_DSN at an existing server."
        )
    bindir = _bindir()
    HOME.mkdir(parents=True, exist_ok=True)
    _let_server_user_reach(HOME)
    _initdb(bindir)
    _write_config()
    process.start([*_run_as(), f"{bindir}/postgres", "-D", str(DATA)], cwd=Path("/"))
    wait_until(answers, 60, "PostgreSQL to accept connections", process)
    _ensure_cdc_role()
    return f"started on 127.0.0.1:{settings.POSTGRES_PORT} (socket in {DATA})"


def down(timeout: float = 30.0) -> bool:
    """Fast shutdown (SIGINT to the postmaster: sessions are ended, then a checkpoint), then the pid file."""
    pid = process.pid()
    if pid is not None:
        try:
            os.kill(pid, signal.SIGINT)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline and process.is_running():
            try:
                os.waitpid(pid, os.WNOHANG)  # a child when `up` ran in this same Python process (tests)
            except ChildProcessError:
                pass
            time.sleep(0.1)
    process.stop()  # SIGKILL if the shutdown hung; removes the pid file
    return pid is not None
