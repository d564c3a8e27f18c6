"""The topic browser against the real Kafka: any topic; partitions; start at the newest messages, an offset or a time;
search in keys, values and headers; headers shown; exact counts of committed records (aborted records and
transaction markers take offsets, the counts must not include them); the topic's configuration; consumer groups
with their lag per partition; bad input answered with a 400 page, an unknown topic with a 404."""

from __future__ import annotations

import datetime
import re
from urllib.parse import quote

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from django.conf import settings

from tests.api_support import create_connector, make_user, no_redis  # noqa: F401 - a fixture
from tests.topic_cleanup import tagged_suffix
from web.dashboard import topic_browser

pytestmark = [pytest.mark.integration, pytest.mark.django_db, pytest.mark.usefixtures("no_redis")]
BASE_MS = 1_700_000_000_000


@pytest.fixture
def viewer(client, django_user_model, stack):
    client.force_login(make_user(django_user_model, "viewer"))
    return client


@pytest.fixture(scope="module")
def topic(stack):
    """2 partitions: p0 holds 3 committed records (offsets 0-2, a marker at 3); p1 an aborted transaction of 2, then
    2 committed records (offsets 3-4 after the aborted 0-1 and their marker at 2, a marker at 5)."""
    name = f"browse.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(name, 2, 1, config={"retention.ms": "123456789"})])[name].result(30)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap, "transactional.id": f"tx-{name}"})
    producer.init_transactions(30)
    producer.begin_transaction()
    for i in range(3):
        producer.produce(name, f'{{"n": {i}, "colour": "{["red", "green", "blue"][i]}"}}'.encode(),
                         f'{{"id": "k{i}"}}'.encode(), partition=0, timestamp=BASE_MS + i * 1000,
                         headers=[("trace", f"trace-{i}".encode()), ("source", b"test")])
    producer.commit_transaction(30)
    producer.begin_transaction()
    for _ in range(2):
        producer.produce(name, b'{"aborted": true}', b'{"id": "gone"}', partition=1, timestamp=BASE_MS + 5000)
    producer.flush(30)
    producer.abort_transaction(30)
    producer.begin_transaction()
    for i in range(2):
        producer.produce(name, f'{{"p1": {i}}}'.encode(), f'{{"id": "p1-{i}"}}'.encode(), partition=1,
                         timestamp=BASE_MS + 10_000 + i * 1000)
    producer.commit_transaction(30)
    group = f"group-{name}"
    consumer = Consumer({"bootstrap.servers": stack.kafka_bootstrap, "group.id": group, "enable.auto.commit": False})
    consumer.commit(offsets=[TopicPartition(name, 0, 1)], asynchronous=False)
    consumer.close()
    return name, group


def page_of(client, topic, query=""):
    response = client.get(f"/topics/{topic}/{query}")
    assert response.status_code == 200, response.content[:2000]
    return response.content.decode()


def offsets_shown(page):
    return re.findall(r'<tbody class="message" data-partition="(\d+)" data-offset="(\d+)">', page)


def searched(client, topic, query):
    """The offsets a search shows. A search stops when its time is up and says so ("the search stopped before"):
    a broker that just started can be that slow, so such a page is asked for again, a few times at most."""
    for _ in range(3):
        page = page_of(client, topic, query)
        if "the search stopped before" not in page:
            return offsets_shown(page)
    raise AssertionError(f"the search {query} never completed: {re.findall(r'[^>]*looked at[^<]*', page)}")


def test_newest_messages_with_headers_and_exact_counts(viewer, topic):
    name, _ = topic
    page = page_of(viewer, name)
    assert sorted(offsets_shown(page)) == [("0", "0"), ("0", "1"), ("0", "2"), ("1", "3"), ("1", "4")]
    assert '"aborted": true' not in page and "gone" not in page
    assert "<dt>trace</dt><dd><code>trace-2</code></dd>" in page
    counts = dict(re.findall(r'<tr data-partition="(\d+)"><th scope="row">\d+</th>\s*<td class="num" '
                             r'data-label="Messages">([^<]*)</td>', page))
    assert counts == {"0": "3", "1": "2"}  # log end minus log start would say 4 and 6
    assert '<td class="num" id="total-messages">5</td>' in page
    assert ">4</td>" in page and ">6</td>" in page  # the log end offsets are shown as such


def test_partition_offset_and_time_starts(viewer, topic):
    name, _ = topic
    assert sorted(offsets_shown(page_of(viewer, name, "?partition=1"))) == [("1", "3"), ("1", "4")]
    assert offsets_shown(page_of(viewer, name, "?partition=0&start=offset&offset=1")) == [("0", "1"), ("0", "2")]
    second = datetime.datetime.fromtimestamp((BASE_MS + 1000) / 1000, datetime.UTC).isoformat()
    at_time = offsets_shown(page_of(viewer, name, f"?start=timestamp&timestamp={quote(second)}"))
    assert at_time == [("0", "1"), ("0", "2"), ("1", "3"), ("1", "4")]  # in time order
    assert offsets_shown(page_of(viewer, name, f"?start=timestamp&timestamp={BASE_MS + 10_500}")) == [("1", "4")]
    assert offsets_shown(page_of(viewer, name, "?n=2")) == [("1", "4"), ("1", "3")]  # the newest two


def test_search_in_keys_values_and_headers(viewer, topic):
    name, _ = topic
    assert searched(viewer, name, "?q=GREEN") == [("0", "1")]  # case-insensitive, in the value
    assert searched(viewer, name, "?q=green&in=key") == []
    assert searched(viewer, name, "?q=p1-1&in=key") == [("1", "4")]
    assert searched(viewer, name, "?q=trace-0&in=headers") == [("0", "0")]
    assert searched(viewer, name, "?q=trace-0&in=value") == []
    assert offsets_shown(page_of(viewer, name, "?key=k2")) == [("0", "2")]  # the older "Key contains" links


def test_filter_expressions_over_keys_values_and_headers(viewer, topic):
    name, _ = topic
    assert searched(viewer, name, "?f=" + quote('value.colour == "blue"')) == [("0", "2")]
    assert searched(viewer, name, "?f=" + quote("value.n >= 1 and key.id != k2")) == [("0", "1")]
    assert searched(viewer, name, "?f=" + quote("headers.trace contains TRACE-0")) == [("0", "0")]
    assert sorted(searched(viewer, name, "?f=" + quote("value.p1 < 5"))) == [("1", "3"), ("1", "4")]
    assert searched(viewer, name, "?f=" + quote("value.colour == red") + "&q=green") == []  # both must match
    page = page_of(viewer, name, "?f=" + quote("value.n == 1"))
    assert "matching the filter" in page and "5 looked at (at most 20" in page


def test_configuration_and_consumer_group_lag(viewer, topic):
    name, group = topic
    page = page_of(viewer, name)
    assert re.search(r'<tr data-config="retention.ms" class="set">.*?<code>123456789</code></td>'
                     r'<td>DYNAMIC_TOPIC_CONFIG</td>', page, re.S)
    assert re.search(r'<tr data-config="segment.bytes">.*?</td><td>DEFAULT_CONFIG</td>', page, re.S)  # not 5 or 4
    row = re.search(rf'<tr data-group="{group}" data-partition="0">.*?</tr>', page, re.S).group(0)
    assert '<td class="num">1</td><td class="num">4</td><td class="num lag">3</td>' in row
    assert f'data-group="{group}" data-partition="1"' not in page  # no committed offset there


def test_every_consumer_group_is_asked_in_batches(viewer, topic, monkeypatch):
    """Kafka cannot list one topic's groups: every group is asked, MAX_GROUPS at a time (before, only the first
    hundred by name were, and a cluster with more groups lost the rest from the page)."""
    name, group = topic
    admin = AdminClient({"bootstrap.servers": settings.KAFKA_BOOTSTRAP_SERVERS})
    groups = admin.list_consumer_groups(request_timeout=10).result(15).valid
    monkeypatch.setattr(topic_browser, "MAX_GROUPS", max(1, len(groups) // 3))  # three batches or more
    page = page_of(viewer, name)
    assert f'<tr data-group="{group}" data-partition="0">' in page and "were not asked" not in page


def test_any_topic_is_listed_and_connector_links_still_work(viewer, topic):
    name, _ = topic
    listing = viewer.get("/topics/").content.decode()
    assert f'href="/topics/{name}/"' in listing and "__consumer_offsets" not in listing
    assert "__consumer_offsets" in viewer.get("/topics/?internal=1").content.decode()
    prefix = name.split(".")[0]
    create_connector("browse", **{"topic.prefix": prefix})
    via_connector = viewer.get(f"/connectors/browse/topics/{name}/")
    assert via_connector.status_code == 200 and 'href="/connectors/browse/"' in via_connector.content.decode()
    assert viewer.get("/connectors/browse/topics/other.topic/").status_code == 404


def test_a_page_cut_short_without_a_search_does_not_speak_of_a_search(viewer, stack):
    name = f"browse.long.{tagged_suffix()}"
    admin = AdminClient({"bootstrap.servers": stack.kafka_bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    producer = Producer({"bootstrap.servers": stack.kafka_bootstrap})
    for i in range(40):  # more than the newest message's first window (2 × 1 + 10 offsets)
        producer.produce(name, f'{{"n": {i}}}'.encode(), partition=0)
    assert producer.flush(30) == 0
    page = page_of(viewer, name, "?n=1")
    assert offsets_shown(page) == [("0", "39")]
    assert "reading stopped before the start of the log" in page
    assert "search" not in re.sub(r"\s+", " ", re.search(r"looked at[^<]*", page).group(0))


@pytest.mark.parametrize("query", ["?partition=abc", "?partition=9", "?start=bogus", "?n=abc", "?n=1.5",
                                   "?start=timestamp&timestamp=yesterday", "?start=timestamp",
                                   "?start=timestamp&timestamp=1900-01-01T00:00:00Z",
                                   "?start=offset&offset=-1", "?in=bogus", "?q=" + "x" * 201,
                                   "?f=" + quote("status == paid"), "?f=" + quote("value.a ==")])
def test_bad_input_is_a_400_page(viewer, topic, query):
    name, _ = topic
    response = viewer.get(f"/topics/{name}/{query}")
    assert response.status_code == 400, (query, response.status_code)
    assert 'class="mainnav"' in response.content.decode()


def test_unknown_topic_is_a_404_and_roles_are_checked(viewer, client, django_user_model, topic):
    assert viewer.get("/topics/no.such.topic.here/").status_code == 404
    assert viewer.get("/topics/bad%20name/").status_code == 404
    client.force_login(make_user(django_user_model, "none"))
    assert client.get(f"/topics/{topic[0]}/").status_code == 403
    assert client.get("/topics/").status_code == 403


def test_kafka_settings_are_the_stacks(stack):
    assert settings.KAFKA_BOOTSTRAP_SERVERS == stack.kafka_bootstrap
