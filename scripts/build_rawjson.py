"""Builds connectors/mongodb/csrc/*.c in place as connectors/mongodb/_rawjson<EXT_SUFFIX> with the C compiler and
headers of the running interpreter; skipped when the module already built is of this source (hash stamp).

Exit status 0 when the module is there afterwards, 1 (with the compiler's message) when it could not be built: the
connector then uses the pure-Python writer (connectors/mongodb/rawjson.py).
"""

from __future__ import annotations

import hashlib
import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "connectors" / "mongodb"
SOURCES = sorted((PACKAGE / "csrc").glob("*.[ch]"))
TARGET = PACKAGE / f"_rawjson{sysconfig.get_config_var('EXT_SUFFIX')}"
STAMP = TARGET.with_name(TARGET.name + ".sha256")


def source_hash() -> str:
    compiler = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    text = b"".join(source.name.encode() + source.read_bytes() for source in SOURCES)
    return hashlib.sha256(text + compiler.encode() + sys.version.encode()).hexdigest()


def build() -> int:
    wanted = source_hash()
    if TARGET.exists() and STAMP.exists() and STAMP.read_text().strip() == wanted:
        return 0
    compiler = shlex.split(os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc")
    partial = TARGET.with_name(TARGET.name + ".partial")
    command = [
        *compiler,
        "-shared",
        "-fPIC",
        "-O2",
        "-std=c11",
        "-Wall",
        "-Werror",
        "-fvisibility=hidden",  # only PyInit__rawjson is exported: the helpers' short names stay inside the module
        f"-I{sysconfig.get_paths()['include']}",
        *(str(source) for source in SOURCES if source.suffix == ".c"),
        "-o",
        str(partial),
        "-lm",
    ]
    result = subprocess.run(command, capture_output=True, text=True)
    if result.returncode != 0:
        partial.unlink(missing_ok=True)
        TARGET.unlink(missing_ok=True)  # a module of an older source must not stay in use
        STAMP.unlink(missing_ok=True)
        sys.stderr.write(result.stderr or result.stdout)
        return 1
    os.replace(partial, TARGET)  # a process that loaded the old module keeps its mapping
    STAMP.write_text(wanted + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(build())
