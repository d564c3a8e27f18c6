"""Debian's MariaDB server with a private data directory, set up as a binlog source (row images, GTIDs).

Started on its own port and socket (DEVSTACK_MARIADB_PORT, default 3307) so a system MySQL/MariaDB is left
alone. MARIADB_DSN names an existing server instead; then nothing is started here.
"""

from __future__ import annotations

import os
import shutil
import subprocess

from devstack import settings
from devstack.process import ManagedProcess, StackError, port_in_use, wait_until

HOME = settings.STATE_DIR / "mariadb"
DATA = HOME / "data"
CONFIG = HOME / "my.cnf"
SOCKET = HOME / "mariadb.sock"
INIT_SQL = HOME / "init.sql"
process = ManagedProcess("mariadb")

CDC_PRIVILEGES = "REPLICATION SLAVE, REPLICATION CLIENT, SELECT, RELOAD, LOCK TABLES"


def uses_external_server() -> bool:
    return bool(os.environ.get("MARIADB_DSN"))


def endpoint() -> str:
    if uses_external_server():
        return "MARIADB_DSN"
    return f"mysql://{settings.MARIADB_CDC_USER[0]}@127.0.0.1:{settings.MARIADB_PORT}/ (socket {SOCKET})"


def _server_binaries() -> tuple[str, str]:
    server, install_db = shutil.which("mariadbd", path=_path()), shutil.which("mariadb-install-db", path=_path())
    if server and install_db:
        return server, install_db
    if os.geteuid() != 0 or shutil.which("apt-get") is None:
        raise StackError("mariadb-server is not installed. Install it (Debian: sudo apt-get install mariadb-server).")
    print("installing mariadb-server with apt-get...", flush=True)
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=False, env=env, capture_output=True)
    result = subprocess.run(
        ["apt-get", "install", "-y", "-qq", "--no-install-recommends", "mariadb-server", "mariadb-client"],
        env=env, capture_output=True, text=True,
    )
    server, install_db = shutil.which("mariadbd", path=_path()), shutil.which("mariadb-install-db", path=_path())
    if result.returncode != 0 or not (server and install_db):
        raise StackError(f"apt-get install mariadb-server failed:\n{result.stderr[-2000:]}")
    return server, install_db


def _path() -> str:
    # mariadbd lives in /usr/sbin, which a non-login shell's PATH may lack
    return os.pathsep.join([os.environ.get("PATH", ""), "/usr/sbin", "/usr/bin"])


def server_config() -> str:
    return f"""\
[mariadbd]
datadir = {DATA}
port = {settings.MARIADB_PORT}
bind-address = 127.0.0.1
socket = {SOCKET}
pid-file = {HOME / "mariadbd.pid"}
skip-name-resolve
character-set-server = utf8mb4
collation-server = utf8mb4_general_ci
performance_schema = OFF
innodb_buffer_pool_size = 64M
# a development server: a commit is written to the OS at once and synced to disk once a second (a server crash,
# kill -9, loses nothing; a machine crash may lose the last second), as the devstack PostgreSQL runs with fsync off.
# Synced at every commit, one connection's single-row transactions topped out near 1,800/s on a loaded 2-core machine
innodb_flush_log_at_trx_commit = 2
max_connections = 200
server_id = {settings.MARIADB_SERVER_ID}
log_bin = mariadb-bin
binlog_format = ROW
binlog_row_image = FULL
binlog_row_metadata = FULL
binlog_expire_logs_seconds = 604800
gtid_domain_id = 0
gtid_strict_mode = ON
"""


def init_sql() -> str:
    """Run by the server at every start (--init-file), so it is written to be idempotent."""
    user, password = settings.MARIADB_ADMIN
    cdc_user, cdc_password = settings.MARIADB_CDC_USER
    return f"""\
SET sql_log_bin = 0;
CREATE USER IF NOT EXISTS '{user}'@'127.0.0.1' IDENTIFIED BY '{password}';
GRANT ALL PRIVILEGES ON *.* TO '{user}'@'127.0.0.1' WITH GRANT OPTION;
CREATE USER IF NOT EXISTS '{cdc_user}'@'%' IDENTIFIED BY '{cdc_password}';
GRANT {CDC_PRIVILEGES} ON *.* TO '{cdc_user}'@'%';
"""


def _root_args() -> list[str]:
    # mariadbd refuses to run as root unless told to; scripts (and CI) run as root here
    return ["--user=root"] if os.geteuid() == 0 else []


def _install_db_once(install_db: str) -> None:
    if (DATA / "mysql").is_dir():
        return
    DATA.mkdir(parents=True, exist_ok=True)
    result = subprocess.run(
        [install_db, f"--defaults-file={CONFIG}", *_root_args(), "--skip-test-db",
         "--auth-root-authentication-method=socket"],
        capture_output=True, text=True,
    )
    if result.returncode != 0:
        shutil.rmtree(DATA, ignore_errors=True)
        raise StackError(f"mariadb-install-db failed:\n{(result.stdout + result.stderr)[-3000:]}")


def admin_connect(timeout: float = 2.0):
    import pymysql

    user, password = settings.MARIADB_ADMIN
    return pymysql.connect(
        host="127.0.0.1", port=settings.MARIADB_PORT, user=user, password=password,
        connect_timeout=timeout, read_timeout=30, write_timeout=30, autocommit=True,
    )


def answers() -> bool:
    try:
        connection = admin_connect(timeout=1)
    except Exception:
        return False
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
            return cursor.fetchone() == (1,)
    except Exception:
        return False
    finally:
        connection.close()


def up() -> str:
    if uses_external_server():
        return "using MARIADB_DSN (not started by devstack)"
    if process.is_running():
        wait_until(answers, 60, "MariaDB to accept connections", process)
        return "already running"
    if port_in_use(settings.MARIADB_PORT):
        raise StackError(
            f"port {settings.MARIADB_PORT} is taken by another program (a system MySQL/MariaDB?). Stop it or "
            "choose another port with DEVSTACK_MARIADB_PORT, or point MARIADB_DSN at an existing server."
        )
    server, install_db = _server_binaries()
    HOME.mkdir(parents=True, exist_ok=True)
    CONFIG.write_text(server_config())
    INIT_SQL.write_text(init_sql())
    INIT_SQL.chmod(0o600)
    _install_db_once(install_db)
    process.start([server, f"--defaults-file={CONFIG}", *_root_args(), f"--init-file={INIT_SQL}"])
    wait_until(answers, 90, "MariaDB to accept connections", process)
    return f"started on 127.0.0.1:{settings.MARIADB_PORT}"


def down() -> bool:
    return process.stop(timeout=60)
