"""Fetch runtime jars from Maven Central with `mvn`, once.

The pom's content is hashed into a marker file beside the jars, so a second `up` downloads nothing
and a changed pom (new Kafka version) refreshes the folder.
"""

from __future__ import annotations

import hashlib
import shutil
import subprocess
from pathlib import Path

from devstack.process import StackError


def require_tool(name: str, hint: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise StackError(f"`{name}` is not on PATH. {hint}")
    return path


def fetch_jars(pom_text: str, dest: Path, label: str) -> list[Path]:
    marker = dest / ".pom.sha256"
    digest = hashlib.sha256(pom_text.encode()).hexdigest()
    if marker.exists() and marker.read_text().strip() == digest:
        return sorted(dest.glob("*.jar"))
    mvn = require_tool("mvn", "Install Maven (Debian: apt-get install maven) so the jars can be fetched.")
    require_tool("java", "Install a JDK 17 or newer (Debian: apt-get install openjdk-17-jdk-headless).")
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    pom = dest / "pom.xml"
    pom.write_text(pom_text)
    print(f"fetching {label} jars from Maven Central (first run only)...", flush=True)
    result = subprocess.run(
        [mvn, "-q", "-B", "-f", str(pom), "dependency:copy-dependencies",
         f"-DoutputDirectory={dest}", "-DincludeScope=runtime"],
        capture_output=True,
        text=True,
    )
    if result.returncode != 0:
        raise StackError(f"mvn could not fetch the {label} jars:\n{(result.stdout + result.stderr)[-3000:]}")
    marker.write_text(digest)
    return sorted(dest.glob("*.jar"))
