"""The zip shipped to Spark executors holds everything the UDFs import: an executor has no checkout of the project."""

from __future__ import annotations

import json
import subprocess
import sys

from sparkjobs.session import package_zip


def test_executor_code_applies_an_update_from_the_zip_alone(tmp_path):
    archive = package_zip(str(tmp_path))
    probe = (
        "import sys; sys.path[:] = [sys.argv[1]] + [p for p in sys.path if 'site-packages' not in p and p];"
        "from sparkjobs import docstate;"
        "print(docstate.fold('{\"a\": {\"b\": [1, 2, 3]}, \"c\": 1}', [{'updated_fields': '{\"a.b.1\": 9}',"
        " 'removed_fields': ['c'], 'truncated_arrays': [('a.b', 2)]}])[0])"
    )
    # Run from an empty directory so the project's own tree is not on the path.
    done = subprocess.run([sys.executable, "-I", "-c", probe, archive], cwd=tmp_path, capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"a": {"b": [1, 9]}}
