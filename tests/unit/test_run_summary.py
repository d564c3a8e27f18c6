"""The end-of-run summary (tests/run_summary.py): its parts, and that pytest's own line stays the last one."""

from __future__ import annotations

import re
import subprocess
import sys

from devstack import settings
from tests import run_summary


def test_redact_hides_passwords_of_urls_and_libpq_dsns():
    assert run_summary.redact("mongodb://u:s3cret@h1:27017,h2/?replicaSet=rs0") == \
        "mongodb://u:***@h1:27017,h2/?replicaSet=rs0"
    assert run_summary.redact("host=db user=cdc password=s3cret dbname=x") == "host=db user=cdc password=*** dbname=x"
    assert run_summary.redact("127.0.0.1:9092") == "127.0.0.1:9092"
    assert run_summary.redact("postgresql://cdc@127.0.0.1:5433/cdc") == "postgresql://cdc@127.0.0.1:5433/cdc"


def test_suite_is_the_top_folder_under_tests():
    assert run_summary.suite_of("tests/unit/control_plane/test_x.py::test_y[a/b]") == "unit"
    assert run_summary.suite_of("tests/emulator/test_spec_crud.py::test_spec[find::x]") == "emulator"
    assert run_summary.suite_of("tests/test_top.py::test_z") == "tests"
    assert {"unit", "integration", "emulator"} <= set(run_summary.suites_on_disk())


def test_every_devstack_service_is_listed(monkeypatch):
    from devstack import stack

    monkeypatch.setenv("MONGODB_URI", "mongodb://user:pw@db.example:27017/?replicaSet=prod")
    lines = run_summary.service_lines()
    names = [line.split()[0] for line in lines]
    assert names == [s.name for s in stack.services() if s.long_running]
    mongo = next(line for line in lines if line.startswith("mongo "))
    assert "external server" in mongo and "user:***@db.example" in mongo and "pw" not in mongo


def test_summary_is_printed_before_pytest_final_line(tmp_path):
    """A real pytest run in a subprocess: the block is there, and the closing line is still pytest's own."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q",
         "tests/unit/test_run_summary.py::test_redact_hides_passwords_of_urls_and_libpq_dsns",
         "tests/unit/test_run_summary.py::test_suite_is_the_top_folder_under_tests"],
        cwd=settings.PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.rstrip().splitlines()
    assert re.fullmatch(r"2 passed in [\d.]+s", lines[-1]), lines[-3:]
    text = "\n".join(lines)
    assert text.index("what this run ran against") < text.index("tests per suite") < len(text) - len(lines[-1])
    unit = next(line for line in lines if line.startswith("unit "))
    assert unit.split()[1:] == ["2", "0", "0", "0", "0"]
    assert any(line.startswith("chromium ") for line in lines)
    assert any(line.startswith("kafka ") for line in lines)


def test_a_parallel_run_prints_the_summary_once_with_every_workers_counts(tmp_path):
    """Two xdist workers, one file each: the block appears once, on the controller, and counts both files."""
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2", "--dist", "loadfile",
         "tests/unit/test_run_summary.py::test_redact_hides_passwords_of_urls_and_libpq_dsns",
         "tests/unit/test_run_summary.py::test_suite_is_the_top_folder_under_tests",
         "tests/unit/test_collector.py"],
        cwd=settings.PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stdout + out.stderr
    lines = out.stdout.rstrip().splitlines()
    assert re.fullmatch(r"6 passed in [\d.]+s", lines[-1]), lines[-3:]
    assert sum("tests per suite" in line for line in lines) == 1
    assert sum("what this run ran against" in line for line in lines) == 1
    unit = next(line for line in lines if line.startswith("unit "))
    assert unit.split()[1:] == ["6", "0", "0", "0", "0"]


def test_a_parallel_run_counts_the_long_forms_its_workers_deselected():
    files = ["tests/faults/test_fault_campaign.py", "tests/faults/test_cluster_broker_kill.py"]
    out = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-n", "2", "--dist", "loadfile", *files,
         "-k", "no_test_is_named_so"],
        cwd=settings.PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    serial = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "--collect-only", "-p", "no:xdist", *files],
        cwd=settings.PROJECT_ROOT, capture_output=True, text=True, timeout=300)
    counted = [line for line in out.stdout.splitlines() if "long forms not run" in line]
    expected = next(line for line in serial.stdout.splitlines() if "long forms not run" in line)
    assert counted == [expected], out.stdout + out.stderr
