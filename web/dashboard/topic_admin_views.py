"""The topic pages' operator forms: create a topic (POST /topics/), delete one (POST /topics/<topic>/delete/, the
name typed again to confirm) and set or reset a property (POST /topics/<topic>/config/), through topic_admin."""

from __future__ import annotations

from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from web.accounts.roles import OPERATOR, has_role
from web.dashboard import topic_admin, topic_browser
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
