"""Where MongoDB's unified-format spec tests come from: the source distribution of the pymongo version that
requirements.txt pins, which ships them under test/<suite>/unified/.

`python -m tests.emulator.spec_source` (run by scripts/install.sh) downloads that sdist with pip once and keeps
only the suites the emulator's spec tests use, as `.devstack/mongodb-spec-tests/<version>/<suite>/*.json`; a
second run downloads nothing. $MONGODB_SPEC_TESTS names another directory instead: this project's layout, a
pymongo checkout's `test/` directory or a mongodb/specifications checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

from devstack import settings

# suite name used by the tests -> directory of the suite in pymongo's source tree (under test/)
SUITES = {"change-streams": "change_streams", "crud": "crud", "transactions": "transactions"}
REQUIREMENTS = settings.PROJECT_ROOT / "requirements.txt"
FETCH_COMMAND = "bash scripts/install.sh"


def pinned_pymongo() -> str:
    match = re.search(r"^pymongo==([^\s;#]+)", REQUIREMENTS.read_text(), re.MULTILINE)
    if not match:
        raise SystemExit(f"{REQUIREMENTS} pins no pymongo version (expected a line `pymongo==X.Y.Z`)")
    return match.group(1)


def cache_dir(version: str | None = None) -> Path:
    return settings.STATE_DIR / "mongodb-spec-tests" / (version or pinned_pymongo())


def root() -> Path:
    env = os.environ.get("MONGODB_SPEC_TESTS")
    return Path(env) if env else cache_dir()


def describe() -> str:
    env = os.environ.get("MONGODB_SPEC_TESTS")
    return f"MONGODB_SPEC_TESTS={env}" if env else f"the pymongo {pinned_pymongo()} source distribution"


def suite_dir(suite: str, base: Path | None = None) -> Path:
    """The directory holding one suite's JSON files, in whichever of the known layouts `base` uses."""
    base = base or root()
    candidates = [base / suite, base / SUITES[suite] / "unified", base / "test" / SUITES[suite] / "unified",
                  base / "source" / suite / "tests" / "unified"]
    return next((c for c in candidates if c.is_dir()), candidates[0])


def missing_message(suite: str) -> str | None:
    """None when the suite's files are there, else what is missing and the command that fetches them."""
    directory = suite_dir(suite)
    if directory.is_dir() and any(directory.glob("*.json")):
        return None
    if os.environ.get("MONGODB_SPEC_TESTS"):
        return f"no {suite} spec tests in MONGODB_SPEC_TESTS={root()} (looked for {directory})"
    return (f"MongoDB's {suite} spec tests are not in {directory}; fetch them with `{FETCH_COMMAND}` "
            f"(or `python -m tests.emulator.spec_source`)")


def required() -> bool:
    """Under CI a missing spec directory fails the run instead of skipping ~800 tests."""
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


def fetch(version: str | None = None, echo=print) -> Path:
    """Download pymongo's sdist and extract the suites into cache_dir(version); nothing when already there."""
    version = version or pinned_pymongo()
    target = cache_dir(version)
    if all((target / suite).is_dir() for suite in SUITES):
        return target
    echo(f"fetching MongoDB's spec tests from the pymongo {version} source distribution into {target}")
    target.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=target.parent, prefix=".fetch-") as tmp:
        download = Path(tmp) / "sdist"
        result = subprocess.run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--disable-pip-version-check",
             "--no-binary", ":all:", "--no-deps", f"pymongo=={version}", "-d", str(download)],
            capture_output=True, text=True)
        archives = sorted(download.glob("pymongo-*.tar.gz")) if download.is_dir() else []
        if result.returncode != 0 or not archives:
            raise SystemExit(f"pip could not download the pymongo {version} sdist:\n{result.stderr.strip()[-2000:]}")
        staged = Path(tmp) / "tests"
        counts = _extract(archives[0], staged)
        if target.exists():
            shutil.rmtree(target)
        staged.rename(target)
    echo("  " + ", ".join(f"{suite}: {n} files" for suite, n in counts.items()))
    return target


def _extract(archive: Path, out: Path) -> dict[str, int]:
    """Copy test/<dir>/unified/*.json of each suite to out/<suite>/ (the JSON files only, nothing executable)."""
    wanted = {f"test/{directory}/unified": suite for suite, directory in SUITES.items()}
    counts = dict.fromkeys(SUITES, 0)
    with tarfile.open(archive) as tar:
        for member in tar.getmembers():
            parts = member.name.split("/")
            # <pymongo-X.Y.Z>/test/<dir>/unified/<file>.json
            if len(parts) != 5 or not member.isfile() or not parts[4].endswith(".json"):
                continue
            suite = wanted.get("/".join(parts[1:4]))
            if suite is None:
                continue
            (out / suite).mkdir(parents=True, exist_ok=True)
            (out / suite / parts[4]).write_bytes(tar.extractfile(member).read())
            counts[suite] += 1
    empty = [suite for suite, n in counts.items() if n == 0]
    if empty:
        raise SystemExit(f"{archive.name} has no unified spec tests for {empty} (looked under test/<suite>/unified)")
    return counts


if __name__ == "__main__":
    fetch()
