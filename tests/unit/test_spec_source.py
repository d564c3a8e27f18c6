"""Where the emulator's spec tests come from (tests/emulator/spec_source.py) and what a missing suite does."""

from __future__ import annotations

import io
import tarfile

import pytest

from tests.emulator import spec_common, spec_source


def _sdist(path, files: dict[str, bytes]):
    with tarfile.open(path, "w:gz") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def test_extract_keeps_only_the_unified_json_of_each_suite_in_the_project_layout(tmp_path):
    archive = _sdist(tmp_path / "pymongo-9.9.9.tar.gz", {
        "pymongo-9.9.9/test/change_streams/unified/change-streams.json": b'{"tests": []}',
        "pymongo-9.9.9/test/crud/unified/find.json": b"{}",
        "pymongo-9.9.9/test/crud/unified/README.rst": b"not a test",
        "pymongo-9.9.9/test/crud/v1/read/count.json": b"{}",
        "pymongo-9.9.9/test/transactions/unified/commit.json": b"{}",
        "pymongo-9.9.9/test/sessions/unified/snapshot.json": b"{}",
        "pymongo-9.9.9/pymongo/__init__.py": b"",
    })
    counts = spec_source._extract(archive, tmp_path / "out")
    assert counts == {"change-streams": 1, "crud": 1, "transactions": 1}
    found = sorted(str(p.relative_to(tmp_path / "out")) for p in (tmp_path / "out").rglob("*") if p.is_file())
    assert found == ["change-streams/change-streams.json", "crud/find.json", "transactions/commit.json"]
    assert (tmp_path / "out" / "change-streams" / "change-streams.json").read_bytes() == b'{"tests": []}'


def test_extract_refuses_an_sdist_without_a_suite(tmp_path):
    archive = _sdist(tmp_path / "pymongo-9.9.9.tar.gz", {"pymongo-9.9.9/test/crud/unified/find.json": b"{}"})
    with pytest.raises(SystemExit, match="change-streams"):
        spec_source._extract(archive, tmp_path / "out")


@pytest.mark.parametrize("layout", ["{suite}", "{pymongo}/unified", "test/{pymongo}/unified",
                                    "source/{suite}/tests/unified"])
def test_suite_dir_reads_this_project_a_pymongo_and_a_specifications_layout(tmp_path, monkeypatch, layout):
    monkeypatch.setenv("MONGODB_SPEC_TESTS", str(tmp_path))
    where = tmp_path / layout.format(suite="change-streams", pymongo="change_streams")
    where.mkdir(parents=True)
    (where / "a.json").write_text("{}")
    assert spec_source.suite_dir("change-streams") == where
    assert spec_source.missing_message("change-streams") is None


def test_default_location_is_per_pinned_pymongo_version(monkeypatch):
    monkeypatch.delenv("MONGODB_SPEC_TESTS", raising=False)
    version = spec_source.pinned_pymongo()
    assert version in (spec_source.REQUIREMENTS.read_text())
    assert spec_source.root().parts[-2:] == ("mongodb-spec-tests", version)


def test_missing_suite_names_the_fix(tmp_path, monkeypatch):
    monkeypatch.setenv("MONGODB_SPEC_TESTS", str(tmp_path))
    assert "MONGODB_SPEC_TESTS" in spec_source.missing_message("crud")
    monkeypatch.delenv("MONGODB_SPEC_TESTS")
    monkeypatch.setattr(spec_source.settings, "STATE_DIR", tmp_path)
    message = spec_source.missing_message("crud")
    assert "bash scripts/install.sh" in message and str(tmp_path) in message


@pytest.mark.parametrize(("ci", "required"), [(None, False), ("", False), ("false", False), ("0", False),
                                              ("true", True), ("1", True), ("yes", True)])
def test_missing_spec_suite_fails_under_ci_and_is_skipped_otherwise(tmp_path, monkeypatch, ci, required):
    monkeypatch.setenv("MONGODB_SPEC_TESTS", str(tmp_path))
    if ci is None:
        monkeypatch.delenv("CI", raising=False)
    else:
        monkeypatch.setenv("CI", ci)
    [param] = spec_common.params("transactions")
    stem, doc, message = param.values
    expected = pytest.fail.Exception if required else pytest.skip.Exception
    with pytest.raises(expected, match="no transactions spec tests"):
        spec_common.run_spec(None, stem, doc, message)
