"""Topic browser pages: every topic of the cluster (`/topics/`), and one topic (`/topics/<topic>/`, also reached as
`/connectors/<name>/topics/<topic>/` from a connector's page) with its messages, partitions with exact counts,
configuration and consumer groups' lag. Viewer role; bad query parameters are a 400 page naming them."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import BadRequest
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_http_methods, require_POST, require_safe

from web.accounts.roles import ADMIN, OPERATOR, VIEWER, has_role
from web.connectors.models import Connector
from web.dashboard import brokers, group_admin, message_filter, topic_admin, topic_admin_views, topic_produce
from web.dashboard import topic_browser as kafka
from web.dashboard.time_input import parse_time
from web.dashboard.topics import belongs_to
from web.dashboard.views import SOURCE, role_required, whole_number

MAX_OFFSET = 2**63 - 1
MAX_TEXT = 200


def _roles(request) -> dict:
    return {"can_operate": has_role(request.user, OPERATOR), "can_admin": has_role(request.user, ADMIN)}


@require_http_methods(["GET", "HEAD", "POST"])
@role_required(VIEWER)
def topic_list(request):
    if request.method == "POST":
        return topic_admin_views.create(request)
    show_internal = request.GET.get("internal") == "1"
    try:
        found, error = kafka.all_topics(), None
    except kafka.KafkaUnavailable as problem:
        found, error = [], str(problem)
    shown = [topic for topic in found if show_internal or not topic.internal]
    return render(request, "dashboard/topics.html", {"topics": shown, "hidden": len(found) - len(shown),
                                                     "internal": show_internal, "error": error, **_roles(request)})


@require_safe
@role_required(VIEWER)
def broker_list(request):
    try:
        (cluster_id, found), error = brokers.brokers(), None
    except kafka.KafkaUnavailable as problem:
        cluster_id, found, error = "", [], str(problem)
    sizes_missing = brokers.with_sizes(found) if found else None
    return render(request, "dashboard/brokers.html", {
        "cluster_id": cluster_id, "brokers": found, "error": error, "sizes_missing": sizes_missing,
        **_roles(request)})


@require_safe
@role_required(VIEWER)
def group_list(request):
    try:
        (found, more), error = group_admin.all_groups(), None
    except (kafka.KafkaUnavailable, topic_produce.Refused) as problem:
        found, more, error = [], 0, str(problem)
    return render(request, "dashboard/groups.html", {"groups": found, "more": more, "error": error,
                                                     **_roles(request)})


@require_safe
@role_required(VIEWER)
def topic_page(request, topic):
    return render_topic(request, topic, connector=None)


@require_safe
@role_required(VIEWER)
def connector_topic(request, name, topic):
    connector = get_object_or_404(Connector, name=name)
    if not belongs_to(connector, topic):
        raise Http404(f"{topic} is not a topic of {name}; open it from the Topics page.")
    return render_topic(request, topic, connector=connector)


def render_topic(request, topic: str, connector):
    """The browser page of `topic` (`connector`: the connector it was opened from, for the way back)."""
    query = parse_query(request)
    context = {"topic": topic, "connector": connector, "query": query, "scopes": kafka.SCOPES, "error": None,
               "page": None, "parts": [], "config": [], "groups": [],
               "max_shown": kafka.MAX_SHOWN_CHARS, "max_scan": kafka.MAX_SCAN, **_roles(request)}
    try:
        parts = kafka.partitions(topic)
    except kafka.UnknownTopic:
        raise Http404(f"There is no topic {topic} in the Kafka cluster.") from None
    except kafka.KafkaUnavailable as problem:
        context["error"] = str(problem)
        return render(request, "dashboard/topic.html", context)
    known = {p.id for p in parts}
    unknown = sorted(set(query.partitions or ()) - known)
    if unknown:
        raise BadRequest(f"partition={unknown[0]} does not exist; {topic} has partitions 0 to {len(parts) - 1}.")
    context["parts"] = parts
    context["header_rows"] = (1, 2, 3)
    if context["can_operate"]:
        context["protected"] = topic_produce.protected_reason(topic)
        context["writers"] = topic_admin.writers(topic)
    try:
        context["page"] = kafka.browse(topic, parts, query)
        kafka.exact_counts(topic, parts)
        context["config"] = kafka.config(topic)
        context["groups"], context["groups_unasked"] = kafka.consumer_groups(topic, parts)
    except kafka.KafkaUnavailable as problem:
        context["error"] = str(problem)
    context["total"] = sum(p.count or 0 for p in parts)
    context["all_counted"] = all(p.counted for p in parts)
    return render(request, "dashboard/topic.html", context)


@require_POST
@role_required(OPERATOR)
def produce_message(request, topic):
    """The topic page's "Produce a message" form: back to the topic page, which shows the message first."""
    post = request.POST
    names, values = post.getlist("header_name"), post.getlist("header_value")
    headers = [(name.strip(), value) for name, value in zip(names, values, strict=False) if name.strip()]
    value = None if post.get("tombstone") == "1" else post.get("value", "")
    try:
        done = topic_produce.produce(topic, post.get("key") or None, value, headers, user=request.user,
                                     source=SOURCE)
    except topic_produce.NoSuchTopic as unknown:
        raise Http404(str(unknown)) from None
    except topic_produce.Refused as refused:
        messages.error(request, f"Not produced: {refused}")
    except kafka.KafkaUnavailable as problem:
        messages.error(request, f"Not produced: Kafka did not answer: {problem}")
    else:
        messages.success(request, f"Message produced to {topic}: partition {done.partition}, offset {done.offset}.")
    return redirect("dashboard:topic-any", topic=topic)


def parse_query(request) -> kafka.Query:
    get = request.GET
    query = kafka.Query(count=whole_number(request, "n", 20, 1, 500))
    chosen = [value.strip() for value in get.getlist("partition") if value.strip() and value.strip() != "all"]
    if chosen:
        try:
            query.partitions = sorted({int(value) for value in chosen})
        except ValueError:
            raise BadRequest("partition must be a partition number (a whole number) or all.") from None
    query.start = get.get("start", "newest").strip() or "newest"
    if query.start not in kafka.STARTS:
        raise BadRequest(f"start={query.start} is not known; use newest, offset or timestamp.")
    if query.start == "offset":
        query.offset = whole_number(request, "offset", 0, 0, MAX_OFFSET)
    if query.start == "timestamp":
        query.timestamp_ms = parse_time(get.get("timestamp", ""))
    text = get.get("q", "")
    scopes = [scope for scope in get.getlist("in") if scope]
    if get.get("key", "").strip() and not text:  # the older "Key contains" links
        text, scopes = get["key"], ["key"]
    if len(text) > MAX_TEXT:
        raise BadRequest(f"q is {len(text)} characters long; search for at most {MAX_TEXT}.")
    bad = [scope for scope in scopes if scope not in kafka.SCOPES]
    if bad:
        raise BadRequest(f"in={bad[0]} is not known; search in key, value and/or headers.")
    query.text = text.strip()
    query.scopes = tuple(scopes) or kafka.SCOPES
    expression = get.get("f", "").strip()
    if expression:
        try:
            query.filter = message_filter.parse(expression)
        except message_filter.FilterError as error:
            raise BadRequest(f"f: {error}") from None
    return query
