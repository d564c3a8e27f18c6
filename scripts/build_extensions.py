"""Builds the project's C extensions in place with the C compiler and headers of the running interpreter, each
skipped when the module already built is of its source (hash stamp):

- connectors/mongodb/csrc/*.c -> connectors/mongodb/_rawjson<EXT_SUFFIX> (MongoDB documents to JSON text);
- connectors/postgres/csrc/*.c -> connectors/postgres/_pgrows<EXT_SUFFIX> (pgoutput tuples and row JSON);
- connectors/mysql/csrc/*.c -> connectors/mysql/_binrows<EXT_SUFFIX> (binlog rows events' rows).

Exit status 0 when every module is there afterwards, 1 (with the compiler's message) when one could not be built:
the connectors then use their pure-Python twins, which write the same text (tests/unit/test_rawjson.py,
tests/postgres/test_pgrows.py) or python-mysql-replication's decoder (tests/mariadb/test_compiled_rows.py).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT / "connectors" / "csrc"  # headers every module may include (json_text.h, plain_bytes.h)
EXTENSIONS = {"_rawjson": ROOT / "connectors" / "mongodb", "_pgrows": ROOT / "connectors" / "postgres",
              "_binrows": ROOT / "connectors" / "mysql"}


def target(name: str) -> Path:
    return EXTENSIONS[name] / f"{name}{sysconfig.get_config_var('EXT_SUFFIX')}"


def sources(name: str) -> list[Path]:
    """The module's C files and headers, and the shared headers (a change to any of them rebuilds it)."""
    return sorted((EXTENSIONS[name] / "csrc").glob("*.[ch]")) + sorted(SHARED.glob("*.h"))


def source_hash(name: str) -> str:
    compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    text = b"".join(source.name.encode() + source.read_bytes() for source in sources(name))
    return hashlib.sha256(text + compiler.encode() + sys.version.encode()).hexdigest()


def build(name: str) -> int:
    built = target(name)
    stamp = built.with_name(built.name + ".sha256")
    wanted = source_hash(name)
    if built.exists() and stamp.exists() and stamp.read_text().strip() == wanted:
        return 0
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    partial = built.with_name(built.name + ".partial")
    command = [
        *compiler,
        "-shared",
        "-fPIC",
        "-O2",
        "-std=c11",
        "-Wall",
        "-Werror",
        "-fvisibility=hidden",  # only PyInit_<name> is exported: the helpers' short names stay inside the module
        f"-I{sysconfig.get_paths()['include']}",
        f"-I{SHARED}",
        *(str(source) for source in sources(name) if source.suffix == ".c"),
        "-o",
        str(partial),
        "-lm",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        built.unlink(missing_ok=True)  # a module of an older source must not stay in use
        stamp.unlink(missing_ok=True)
        sys.stderr.write(result.stderr or result.stdout)
        return 1
    os.replace(partial, built)  # a process that loaded the old module keeps its mapping
    stamp.write_text(wanted + "\n")
    return 0


if __name__ == "__main__":
    names = sys.argv[1:] or list(EXTENSIONS)
    sys.exit(max(build(name) for name in names))
