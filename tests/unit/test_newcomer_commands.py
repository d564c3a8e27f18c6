"""What a newcomer meets first: `./cdc`, `python -m devstack --help`, `.ci/run` and the first install's output."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def run(*args, cwd=ROOT, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(list(args), cwd=cwd, env={**os.environ, **(env or {})}, capture_output=True, text=True,
                          timeout=120)


def test_cdc_refuses_an_unknown_command_by_name():
    result = run("./cdc", "bogus")
    assert result.returncode != 0
    assert "unknown command 'bogus'" in result.stderr
    assert "./cdc demo" in result.stderr  # and shows what it knows


def test_cdc_help_names_the_three_demo_connectors_and_how_long_things_take():
    result = run("./cdc", "help")
    assert result.returncode == 0
    assert "three demo connectors" in result.stdout and "a demo connector" not in result.stdout
    assert "PostgreSQL" in result.stdout and "MariaDB" in result.stdout
    assert "min" in result.stdout  # the first `demo` and `test` take minutes: the help says about how many


def test_devstack_help_names_postgres_and_the_three_demo_connectors():
    result = run(sys.executable, "-m", "devstack", "--help")
    assert result.returncode == 0
    words = " ".join(result.stdout.split())
    assert "a demo connector" not in words and "three demo connectors" in words
    up_help = words.split("up ", 1)[1].split(" down ", 1)[0]
    started, named = up_help.split(";", 1)
    assert "PostgreSQL" in started and "MariaDB" in named and named.rstrip().endswith("only when named"), up_help


def test_ci_run_sets_ci_itself_so_spec_tests_cannot_be_skipped(tmp_path):
    """.ci/run in a copy whose install step and `./cdc` only report what they were given."""
    (tmp_path / ".ci").mkdir()
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / ".ci" / "run", tmp_path / ".ci" / "run")
    (tmp_path / "scripts" / "install.sh").write_text('echo "install CI=${CI:-unset}"\n')
    (tmp_path / "cdc").write_text('#!/usr/bin/env bash\necho "cdc $* CI=${CI:-unset}"\n')
    (tmp_path / "cdc").chmod(0o755)
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    result = subprocess.run(["bash", ".ci/run"], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "install CI=true" in result.stdout
    assert "cdc test CI=true" in result.stdout


def test_first_install_announces_each_slow_step_and_lets_pip_show_progress(tmp_path):
    """scripts/install.sh in a copy with a fresh requirements file and a stand-in interpreter that records its
    calls: each long step is announced with its rough duration before it runs, and pip is not silenced."""
    (tmp_path / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "install.sh", tmp_path / "scripts" / "install.sh")
    (tmp_path / "requirements.txt").write_text("example==1.0\n")
    (tmp_path / "sparkjobs").mkdir()  # run as root, the script checks that the Spark job user reaches it
    calls = tmp_path / "calls"
    python = tmp_path / "python"
    python.write_text(f"""#!{sys.executable}
import sys
args = sys.argv[1:]
if args[:1] == ["-c"] and "sys.prefix" in args[1]:
    print({str(tmp_path)!r})
elif args[:1] == ["-c"] and "sys.executable" in args[1]:
    print({str(python)!r})
else:
    with open({str(calls)!r}, "a") as out:
        out.write(" ".join(args) + "\\n")
""")
    python.chmod(0o755)
    result = subprocess.run(["bash", "scripts/install.sh"], cwd=tmp_path, capture_output=True, text=True,
                            timeout=120, env={**os.environ, "PYTHON": str(python), "CDC_INSTALL_BROWSER": "0",
                                              "SPARK_JOB_USER": "root"})
    assert result.returncode == 0, result.stderr
    steps = [line for line in result.stdout.splitlines() if line.startswith("==> ")]
    said = "\n".join(steps)
    assert "Python requirements" in said and "minutes the first time" in said
    assert "jars" in said and "spec tests" in said
    pip = next(line for line in calls.read_text().splitlines() if line.startswith("-m pip install"))
    assert " -q" not in f" {pip}" and "--quiet" not in pip
    assert steps[-1].endswith("installed")


def test_readme_quick_start_says_how_long_things_take_and_how_to_call_the_api():
    text = (ROOT / "README.md").read_text()
    quick_start = " ".join(text.split("## Quick start", 1)[1].split("\n## ", 1)[0].split())
    assert "first `./cdc demo` takes about" in quick_start
    assert "`./cdc test` runs" in quick_start and "minutes on a 2-core machine" in quick_start
    assert "/api/auth/token/" in quick_start and "Authorization: Token" in quick_start
    assert "dbz_signal" in quick_start  # the demo's connectors can take an ad-hoc snapshot
