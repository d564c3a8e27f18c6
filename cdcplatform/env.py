"""Reading settings from the environment: typed helpers and the development secret key file.

Kept apart from settings.py so the rules (what counts as true, how lists are split, how the
development key is created) are small, testable functions.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured
from django.core.management.utils import get_random_secret_key

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean; use 1/0, true/false, yes/no or on/off")


def env_int(name: str, default: int) -> int:
    raw = os.environ.get(name)
    if raw is None or not raw.strip():
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer") from None


def env_list(name: str, default: list[str]) -> list[str]:
    """A comma-separated list; blanks are dropped. Unset means `default`, set-but-empty means []."""
    raw = os.environ.get(name)
    if raw is None:
        return list(default)
    return [item.strip() for item in raw.split(",") if item.strip()]


def read_or_create_secret_key(path: Path, generate: Callable[[], str] = get_random_secret_key) -> str:
    """The development SECRET_KEY (or another generated secret) kept in `path` (mode 0600), created on first use.

    The file is written to a private temporary file and hard-linked into place, so when the web
    server and a worker start at the same moment both end up with the same key.
    """
    try:
        key = path.read_text().strip()
    except FileNotFoundError:
        key = ""
    if key:
        return key
    path.parent.mkdir(parents=True, exist_ok=True)
    descriptor, temporary = tempfile.mkstemp(dir=path.parent, prefix=".secret_key.")  # mkstemp uses mode 0600
    try:
        with os.fdopen(descriptor, "w") as handle:
            handle.write(generate() + "\n")
        try:
            os.link(temporary, path)
        except FileExistsError:
            pass  # another process won the race; use its key
    finally:
        os.unlink(temporary)
    return path.read_text().strip()


def private_sqlite_file(path: Path) -> None:
    """Creates the SQLite database file (and its directory) readable by the owner only — 0600 in a 0700
    directory — before SQLite does with the umask's 0644: it holds sessions, API tokens and the audit log. SQLite
    gives its -wal and -shm files the database file's mode."""
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    path.parent.chmod(0o700)
    descriptor = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        os.fchmod(descriptor, 0o600)
    finally:
        os.close(descriptor)
