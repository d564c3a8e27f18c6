"""The MongoDB Java driver's JsonWriter as a test oracle: one JVM, fed BSON documents in batches.

The driver's bson jar comes from Maven Central (tests/oracle/bson-pom.xml, fetched once into .devstack/oracle), the
program (tests/oracle/JsonOracle.java) is compiled there at first use. A JDK 19 or newer is required: from 19 on,
Double.toString writes the shortest digits (as Debezium 3.x's Java 21 does; JDK 17 sometimes writes more).
"""

from __future__ import annotations

import os
import re
import shutil
import struct
import subprocess
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path

import bson

from devstack.maven import fetch_jars

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent.parent
HOME = ROOT / ".devstack" / "oracle"
STRICT, RELAXED, KEY = b"S", b"R", b"K"
_LENGTH = struct.Struct(">i")


class OracleUnavailable(RuntimeError):
    pass


def _java_version(java: Path) -> int:
    try:
        out = subprocess.run([str(java), "-version"], capture_output=True, text=True, timeout=30).stderr
    except (OSError, subprocess.TimeoutExpired):
        return 0
    found = re.search(r'version "(\d+)', out)
    return int(found.group(1)) if found else 0


def find_jdk(minimum: int = 19) -> Path:
    """The bin folder of a JDK >= minimum: JAVA_HOME, the `javac` on PATH, or one under /usr/lib/jvm."""
    candidates = []
    if os.environ.get("JAVA_HOME"):
        candidates.append(Path(os.environ["JAVA_HOME"]) / "bin")
    if shutil.which("javac"):
        candidates.append(Path(shutil.which("javac")).resolve().parent)
    jvm = Path("/usr/lib/jvm")
    if jvm.is_dir():
        candidates.extend(sorted((path / "bin" for path in jvm.iterdir()), reverse=True))
    for folder in candidates:
        if (folder / "javac").exists() and _java_version(folder / "java") >= minimum:
            return folder
    raise OracleUnavailable(f"no JDK {minimum}+ found (JAVA_HOME, PATH, /usr/lib/jvm)")


def build() -> list[str]:
    """The java command line of the oracle, fetching and compiling what is missing."""
    jdk = find_jdk()
    jars = fetch_jars((HERE / "bson-pom.xml").read_text(), HOME / "jars", "MongoDB bson")
    classes = HOME / "classes"
    source = HERE / "JsonOracle.java"
    compiled = classes / "JsonOracle.class"
    classpath = os.pathsep.join([str(classes), *map(str, jars)])
    if not compiled.exists() or compiled.stat().st_mtime < source.stat().st_mtime:
        classes.mkdir(parents=True, exist_ok=True)
        subprocess.run([str(jdk / "javac"), "-nowarn", "-d", str(classes), "-cp", classpath, str(source)],
                       check=True, capture_output=True)
    return [str(jdk / "java"), "-Xshare:auto", "-XX:+UseSerialGC", "-cp", classpath, "JsonOracle"]


class JavaJson:
    """Feed (mode, document) pairs, get the driver's JSON text of each, in order."""

    def __init__(self) -> None:
        self._process = subprocess.Popen(build(), stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def write(self, requests: Sequence[tuple[bytes, bytes]]) -> list[str]:
        """requests: (mode, BSON bytes of a document)."""
        stdin, stdout = self._process.stdin, self._process.stdout

        def feed() -> None:
            stdin.write(b"".join(mode + data for mode, data in requests) + b"F")
            stdin.flush()

        feeder = threading.Thread(target=feed)
        feeder.start()
        texts = []
        for _ in requests:
            head = stdout.read(4)
            if len(head) < 4:
                raise RuntimeError("the Java oracle stopped")
            texts.append(stdout.read(_LENGTH.unpack(head)[0]).decode())
        feeder.join()
        return texts

    def documents(self, mode: bytes, documents: Iterable[dict]) -> list[str]:
        return self.write([(mode, bson.encode(document)) for document in documents])

    def close(self) -> None:
        self._process.stdin.close()
        self._process.wait(30)
