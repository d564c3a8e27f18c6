"""A connector on a sharded cluster (read through mongos) shows the cluster's shards on its detail page: each shard
with its primary, the primary changes (elections) seen per shard, and the chunk migrations the config servers
logged since the pipeline started. A viewer sees it; the section names hosts, never a connection string. The
cluster is the test's own emulated 2-shard cluster (mongos, a config server, two 3-member shards)."""

from __future__ import annotations

import re
import time

import pymongo
import pytest

from devstack.mongo.sharded_handle import start_sharded_cluster
from tests.browser.conftest import create_connector, delete_every_connector, screenshot, wait_streaming
from tests.topic_cleanup import tagged_suffix

pytestmark = [pytest.mark.browser, pytest.mark.integration, pytest.mark.slow]

HOST_PORT = re.compile(r"^[\w.-]+:\d+$")


@pytest.fixture(scope="module")
def sharded(platform):
    handle = start_sharded_cluster(shards=2, members=3, election_timeout=0.3, stepdown_election_delay=0.05,
                                   noop_interval=0.5)
    yield handle
    delete_every_connector(platform)
    handle.stop()


def _shard_rows(page) -> dict[str, dict]:
    rows = page.locator("[data-bind=shards] tbody tr")
    found = {}
    for i in range(rows.count()):
        row = rows.nth(i)
        found[row.get_attribute("data-shard")] = {"primary": row.locator("td.primary").inner_text(),
                                                  "elections": int(row.locator("td.elections").inner_text())}
    return found


def _until(page, url: str, check, what: str, timeout: float = 120.0):
    """Reloads `url` until check(page) is true (the worker asks mongos about the shards every few seconds)."""
    deadline = time.monotonic() + timeout
    while True:
        page.goto(url)
        page.locator("main").wait_for()
        if check(page):
            return
        if time.monotonic() > deadline:
            screenshot(page, "shards-view-timeout")
            raise AssertionError(f"the detail page never showed {what}: {page.locator('main').inner_text()[:2000]}")
        time.sleep(2)


def test_sharded_connector_shows_shards_primaries_elections_and_migrations(session, platform, sharded):
    name = f"btshard{tagged_suffix()}"
    client = pymongo.MongoClient(sharded.uri, serverSelectionTimeoutMS=10000)
    client.admin.command("enableSharding", name, primaryShard="shard0")
    client.admin.command("shardCollection", f"{name}.docs", key={"k": 1})
    client.admin.command("split", f"{name}.docs", middle={"k": 100})
    client[name].docs.insert_many([{"_id": i, "k": i * 10} for i in range(20)])
    create_connector(platform, sharded, name)
    current, page = session("viewer")
    url = f"/connectors/{name}/"
    page.goto(url)
    wait_streaming(page, name, timeout_ms=120_000)
    _until(page, url, lambda p: set(_shard_rows(p)) == {"shard0", "shard1"}, "both shards")

    rows = _shard_rows(page)
    for index, shard in enumerate(("shard0", "shard1")):
        assert rows[shard]["primary"] == sharded.shard(index).hosts[sharded.shard(index).primary_index()], rows
        assert rows[shard]["elections"] == 0, rows
    assert page.locator("[data-bind=shards] [data-migrations]").inner_text() == "0"

    # a migration and a step-down of shard0's primary, after the pipeline's first look at the cluster
    old = sharded.shard(0).primary_index()
    sharded.move_chunk(f"{name}.docs", {"k": 150}, "shard1")
    sharded.shard(0).step_down(seconds=30)
    new = sharded.shard(0).wait_for_primary(not_index=old)
    _until(page, url, lambda p: _shard_rows(p).get("shard0", {}).get("elections") == 1
           and p.locator("[data-bind=shards] [data-migrations]").inner_text() == "1",
           "shard0's election and the migration")

    rows = _shard_rows(page)
    assert rows["shard0"]["primary"] == sharded.shard(0).hosts[new], rows
    assert rows["shard1"]["elections"] == 0, rows
    section = page.locator("[data-bind=shards]").inner_text()
    assert f"{name}.docs → shard1" in section, section
    screenshot(page, "shards-view")
    for host in page.locator("[data-bind=shards] td.primary").all_inner_texts():
        assert HOST_PORT.match(host), host
    assert "mongodb://" not in page.locator("[data-bind=shards]").inner_html()
    client.close()
