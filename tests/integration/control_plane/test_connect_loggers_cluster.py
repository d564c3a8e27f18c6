"""`PUT /connect/admin/loggers/{name}?scope=cluster` reaches a real Celery worker: the web process (daphne) answers
204 and the worker, asked afterwards through Celery's remote control, has the level (tests/platform_processes.py)."""

from __future__ import annotations

import json
import urllib.request

import pytest
from celery import Celery

from tests.platform_processes import Platform

pytestmark = [pytest.mark.integration, pytest.mark.slow]

REDIS_DB = 9  # apart from a running demo (0) and the other process tests (10-15)
LOGGER = "cdc.cluster.scope.check"


def test_cluster_scope_sets_the_level_in_the_workers(stack, tmp_path):
    platform = Platform(stack, tmp_path, REDIS_DB)
    try:
        platform.migrate()
        token = platform.django(
            "from django.contrib.auth.models import Group, User\n"
            "from rest_framework.authtoken.models import Token\n"
            "user = User.objects.create_user('loggers-admin')\n"
            "user.groups.add(Group.objects.get(name='admin'))\n"
            "print(Token.objects.create(user=user).key)\n"
        ).strip().splitlines()[-1]
        worker = platform.start_worker("worker", queues="default", concurrency=1)
        platform.start_web()
        request = urllib.request.Request(  # noqa: S310 - our daphne, over http
            f"{platform.base_url}/connect/admin/loggers/{LOGGER}?scope=cluster", method="PUT",
            data=json.dumps({"level": "DEBUG"}).encode(),
            headers={"Authorization": f"Token {token}", "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310
            assert response.status == 204

        app = Celery(broker=platform.env["REDIS_URL"])
        replies = app.control.broadcast("cdc_log_levels", reply=True, destination=[worker], timeout=10)
        assert len(replies) == 1, (replies, platform.log("worker")[-3000:])
        levels = replies[0][worker]
        assert levels[LOGGER]["level"] == "DEBUG" and isinstance(levels[LOGGER]["last_modified"], int)
        assert "root" in levels
    finally:
        platform.stop()
