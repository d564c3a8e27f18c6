"""The topic pages' operator forms: create a topic (POST /topics/), delete one (POST /topics/<topic>/delete/, the
name typed again to confirm), set or reset a property (POST /topics/<topic>/config/), through topic_admin; reset a
consumer group's offsets on the topic or delete the group (POST /topics/<topic>/groups/<group>/reset|delete/),
through group_admin."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from web.accounts.roles import OPERATOR, has_role
from web.dashboard import group_admin, topic_admin, topic_browser
from web.dashboard.time_input import parse_time
from web.dashboard.topic_produce import Refused
from web.dashboard.views import SOURCE, role_required


def _whole(raw: str, name: str) -> int:
    try:
        return int(raw.strip() or "1")
    except ValueError:
        raise Refused(f"{name} must be a whole number.") from None


def create(request):
    """The Topics page's POST: a new topic, then its page."""
    if not has_role(request.user, OPERATOR):
        raise PermissionDenied(f"Creating a topic needs the {OPERATOR} role.")
    name = request.POST.get("name", "").strip()
    try:
        topic_admin.create_topic(name, _whole(request.POST.get("partitions", ""), "Partitions"),
                                 _whole(request.POST.get("replication_factor", ""), "Replication factor"), {},
                                 user=request.user, source=SOURCE)
    except Refused as refused:
        messages.error(request, f"Topic not created: {refused}")
        return redirect("dashboard:topics")
    except topic_browser.KafkaUnavailable as problem:
        messages.error(request, f"Topic not created: Kafka did not answer: {problem}")
        return redirect("dashboard:topics")
    messages.success(request, f"Topic {name} created.")
    return redirect("dashboard:topic-any", topic=name)


@require_POST
@role_required(OPERATOR)
def delete(request, topic):
    if request.POST.get("confirm", "").strip() != topic:
        messages.error(request, f"Topic not deleted: type its name, {topic}, to confirm.")
        return redirect("dashboard:topic-any", topic=topic)
    try:
        topic_admin.delete_topic(topic, user=request.user, source=SOURCE)
    except topic_browser.UnknownTopic:
        raise Http404(f"There is no topic {topic} in the Kafka cluster.") from None
    except (Refused, topic_browser.KafkaUnavailable) as problem:
        messages.error(request, f"Topic not deleted: {problem}")
        return redirect("dashboard:topic-any", topic=topic)
    messages.success(request, f"Topic {topic} deleted.")
    return redirect("dashboard:topics")


@require_POST
@role_required(OPERATOR)
def configure(request, topic):
    name = request.POST.get("property", "").strip()
    value = None if "reset" in request.POST else request.POST.get("value", "")
    try:
        topic_admin.alter_config(topic, {name: value}, user=request.user, source=SOURCE)
    except topic_browser.UnknownTopic:
        raise Http404(f"There is no topic {topic} in the Kafka cluster.") from None
    except (Refused, topic_browser.KafkaUnavailable) as problem:
        messages.error(request, f"Configuration not changed: {problem}")
    else:
        messages.success(request, f"{name} {'reset to its default' if value is None else f'set to {value}'}.")
    return redirect("dashboard:topic-any", topic=topic)


@require_POST
@role_required(OPERATOR)
def group_reset(request, topic, group):
    to = request.POST.get("to", "")
    try:
        if to == "timestamp" and not request.POST.get("timestamp", "").strip():
            raise Refused("a reset to a time needs the time (ISO-8601 such as 2026-01-31T12:00:00Z, or epoch ms).")
        moment = parse_time(request.POST.get("timestamp", "")) if to == "timestamp" else None
        offsets = group_admin.reset_offsets(group, topic, to, moment, user=request.user, source=SOURCE)
    except BadRequest as bad:
        messages.error(request, f"Offsets not reset: {bad}")
    except (Refused, topic_browser.UnknownTopic, topic_browser.KafkaUnavailable) as problem:
        messages.error(request, f"Offsets not reset: {problem}")
    else:
        shown = ", ".join(f"partition {p} → {o}" for p, o in sorted(offsets.items()))
        messages.success(request, f"Consumer group {group} reset on {topic}: {shown}.")
    return redirect("dashboard:topic-any", topic=topic)


@require_POST
@role_required(OPERATOR)
def group_delete(request, topic, group):
    try:
        group_admin.delete_group(group, user=request.user, source=SOURCE)
    except (Refused, topic_browser.KafkaUnavailable) as problem:
        messages.error(request, f"Consumer group not deleted: {problem}")
    else:
        messages.success(request, f"Consumer group {group} deleted.")
    return redirect("dashboard:topic-any", topic=topic)
