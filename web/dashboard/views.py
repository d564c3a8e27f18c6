"""Dashboard pages: thin views over web.connectors (models, services, the API's serializer) and the modules beside
this one. Every page needs the viewer role; forms need admin, as the API does; pause/resume/restart/snapshot and
offset resets are sent by the page's JS to the REST API itself, which checks the roles again."""

from __future__ import annotations

from functools import wraps

from django.contrib import messages
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from connectors.postgres.publication import drop_publication_sql, drop_slot_sql
from web.accounts.roles import ADMIN, OPERATOR, VIEWER, has_role, highest_role
from web.connectors import services
from web.connectors.api.serializers import request_outcomes
from web.connectors.connect import shapes
from web.connectors.models import AuditEntry, Connector, ReplicaSetState, SourceKind
from web.connectors.offsets import RESET_MODES, describe, offsets_topic
from web.connectors.partition_offsets import RESET_MODES as PARTITION_RESET_MODES
from web.dashboard import health, history, observed, prometheus, slots, topics
from web.dashboard.auth import metrics_user
from web.dashboard.forms import ConnectorForm, api_problems
from web.dashboard.relational_form import RelationalConnectorForm, live_check_spec
from web.dashboard.vocabulary import terms_for

RELATIONAL = (SourceKind.POSTGRES, SourceKind.MYSQL, SourceKind.MARIADB)
SOURCE_NAMES = dict(SourceKind.choices)

SOURCE = "dashboard"  # AuditEntry.source of changes made through these pages

LOG_LEVEL_CHOICES = ("ERROR", "WARN", "INFO", "DEBUG", "TRACE")  # a pipeline's level from the connector page

# (signal, button, confirmation) for the running incremental snapshot (POST /api/connectors/<name>/snapshot/<signal>/)
SNAPSHOT_SIGNAL_BUTTONS = (
    ("pause", "Pause snapshot", "Pause the incremental snapshot? Streaming goes on; Resume snapshot continues it."),
    ("resume", "Resume snapshot", "Resume the paused incremental snapshot?"),
    ("stop", "Stop snapshot", "Stop the incremental snapshot? What is not read yet is dropped; streaming goes on."),
)


def role_required(role: str):
    def decorate(view):
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            if not has_role(request.user, role):
                raise PermissionDenied(f"This page needs the {role} role.")
            return view(request, *args, **kwargs)

        return wrapper

    return decorate


def whole_number(request, name: str, default: int, low: int, high: int) -> int:
    """A whole-number query parameter within [low, high]; anything else is a 400 page naming it."""
    raw = request.GET.get(name, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        raise BadRequest(f"{name}={raw} is not a whole number; give a whole number from {low} to {high}.") from None
    if not low <= value <= high:
        raise BadRequest(f"{name}={value} is out of range; give a whole number from {low} to {high}.")
    return value


def _roles(request) -> dict:
    return {"can_operate": has_role(request.user, OPERATOR), "can_admin": has_role(request.user, ADMIN)}


def _connectors():
    return Connector.objects.prefetch_related("replica_sets").order_by("name")


@require_safe
def home(request):
    if highest_role(request.user) is None:
        return render(request, "dashboard/no_role.html")  # their landing page says whom to ask
    views = [observed.connector_view(connector) for connector in _connectors()]
    sparklines = {
        view.name: history.connector_rate(
            history.replica_set_series(view.name, [rs.name for rs in view.replica_sets], minutes=15, step_s=10)
        )
        for view in views
    }
    return render(request, "dashboard/overview.html",
                  {"connectors": views, "sparklines": sparklines, **_roles(request)})


@require_safe
@role_required(VIEWER)
def cluster_health(request):
    return render(request, "dashboard/_health.html", {"probes": health.cluster()})


@require_safe
@role_required(VIEWER)
def connector_detail(request, name):
    connector = get_object_or_404(Connector.objects.prefetch_related("replica_sets", "filters"), name=name)
    view = observed.connector_view(connector)
    audit = AuditEntry.objects.filter(target=f"connector:{name}")[:8]
    return render(request, "dashboard/detail.html", {
        "c": view, "audit": audit, "snapshot_refusal": services.snapshot_refusal(connector),
        "snapshot_signals": SNAPSHOT_SIGNAL_BUTTONS, "log_levels": LOG_LEVEL_CHOICES,
        "log_level_now": next((rs.report.get("log_level") for rs in view.replica_sets if rs.report.get("log_level")),
                              "INFO"),
        "terms": terms_for(connector),
        "requests": request_outcomes(connector, limit=10), **_roles(request)})


@require_safe
@role_required(VIEWER)
def connector_requests(request, name):
    """The detail page's Requests panel (refreshed every few seconds): each request with how it ended."""
    connector = get_object_or_404(Connector, name=name)
    return render(request, "dashboard/_requests.html", {"requests": request_outcomes(connector, limit=10)})


@require_safe
@role_required(VIEWER)
def replica_set_card(request, name, replica_set):
    """One replica set's card, for a detail page that was opened before the replica set first reported."""
    state = ReplicaSetState.objects.select_related("connector").filter(connector__name=name,
                                                                       replica_set=replica_set).first()
    if state is None:
        return HttpResponse(status=204)  # not stored yet: the page asks again with the next report
    return render(request, "dashboard/_replica_set.html", {"rs": observed.replica_set_view(state),
                                                           "terms": terms_for(state.connector)})


@require_safe
@role_required(VIEWER)
def connector_history(request, name):
    connector = get_object_or_404(Connector, name=name)
    minutes = whole_number(request, "minutes", 60, 1, 60)
    step = whole_number(request, "step", 1, 1, 60)
    replica_sets = list(connector.replica_sets.values_list("replica_set", flat=True))
    return JsonResponse(history.replica_set_series(name, replica_sets, minutes=minutes, step_s=step))


@require_safe
@role_required(VIEWER)
def connector_topics(request, name):
    connector = get_object_or_404(Connector, name=name)
    try:
        found, error = topics.connector_topics(connector), None
    except topics.KafkaUnavailable as problem:
        found, error = [], str(problem)
    return render(request, "dashboard/_topics.html", {"connector": connector, "topics": found, "error": error})


def _save_connector(request, form: ConnectorForm | RelationalConnectorForm, connector: Connector | None):
    """Validates the form's API body with the API's serializer and saves it through the services."""
    problems, serializer = api_problems(form, request)
    if problems:  # the serializer's and a taken name, together
        form.add_problems(problems)
        return None
    data = serializer.validated_data
    try:
        if connector is None:
            return services.create_connector(data["parts"], user=request.user, source=SOURCE,
                                             desired_state=data.get("desired_state", "running"))
        return services.update_connector(connector, data["parts"], user=request.user, source=SOURCE)
    except services.AlreadyExists as error:
        form.add_error("name", str(error))
    except services.ServiceError as error:
        form.add_error(None, str(error))
    return None


def _relational_form(request, connector: Connector | None, source: str):
    """New or edit page of a PostgreSQL or MySQL/MariaDB connector (web.dashboard.relational_form)."""
    form = RelationalConnectorForm(request.POST or None, connector=connector, source=source)
    if request.method == "POST" and form.is_valid():
        saved = _save_connector(request, form, connector)
        if saved is not None:
            messages.success(request, f"Connector {saved.name} {'saved' if connector else 'created'}.")
            return redirect("dashboard:connector", name=saved.name)
    validate_url = (reverse("connector-validate-existing", kwargs={"name": connector.name}) if connector
                    else reverse("connector-validate"))
    preview_url = (reverse("connector-tables-existing", kwargs={"name": connector.name}) if connector
                   else reverse("connector-tables"))
    return render(request, "dashboard/relational_form.html",
                  {"form": form, "connector": connector, "source": source, "source_name": SOURCE_NAMES[source],
                   "validate_url": validate_url, "preview_url": preview_url, "live_check": live_check_spec(source),
                   **_roles(request)}, status=400 if form.errors else 200)


@role_required(ADMIN)
def connector_create(request):
    source = request.POST.get("source") or request.GET.get("source") or SourceKind.MONGODB
    if source in RELATIONAL:
        return _relational_form(request, None, source)
    form = ConnectorForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        saved = _save_connector(request, form, None)
        if saved is not None:
            messages.success(request, f"Connector {saved.name} created ({saved.desired_state}).")
            return redirect("dashboard:connector", name=saved.name)
    return render(request, "dashboard/form.html", {"form": form, "connector": None, **_roles(request),
                                                  "validate_url": reverse("connector-validate"),
                                                  "preview_url": reverse("connector-tables")},
                  status=400 if form.errors else 200)


@role_required(ADMIN)
def connector_edit(request, name):
    connector = get_object_or_404(Connector, name=name)
    if connector.source in RELATIONAL:
        return _relational_form(request, connector, connector.source)
    form = ConnectorForm(request.POST or None, connector=connector)
    if request.method == "POST" and form.is_valid():
        saved = _save_connector(request, form, connector)
        if saved is not None:
            messages.success(request, f"Connector {saved.name} saved.")
            return redirect("dashboard:connector", name=saved.name)
    return render(request, "dashboard/form.html",
                  {"form": form, "connector": connector, **_roles(request),
                   "validate_url": reverse("connector-validate-existing", kwargs={"name": name}),
                   "preview_url": reverse("connector-tables-existing", kwargs={"name": name})},
                  status=400 if form.errors else 200)


@role_required(ADMIN)
def connector_delete(request, name):
    """GET: what deleting means, with the offsets choice Kafka Connect users know and, for PostgreSQL, whether its
    slot and publication are dropped; POST: delete."""
    connector = get_object_or_404(Connector, name=name)
    server = services.postgres_config(connector)
    if request.method == "POST":
        delete_offsets = request.POST.get("offsets") == "delete"
        try:
            outcomes = services.delete_connector(
                connector, user=request.user, source=SOURCE, delete_offsets=delete_offsets,
                drop_slot=request.POST.get("drop_slot") == "on",
                drop_publication=request.POST.get("drop_publication") == "on")
        except services.ServiceError as error:
            messages.error(request, f"{name} was not deleted: {error}")
            return redirect("dashboard:connector-delete", name=name)
        messages.success(request, f"Connector {name} deleted; its offsets were "
                                  + ("deleted too." if delete_offsets else "kept in Kafka."))
        for outcome in outcomes:
            (messages.warning if outcome.sql else messages.info)(request, outcome.message)
        return redirect("home")
    context = {"connector": connector, "topic": offsets_topic(connector)[0], "server": server, **_roles(request)}
    if server is not None:
        context.update(creates_publication=services.creates_publication(server),
                       shared=services.shared_server_objects(connector, server),
                       drop_slot_sql=drop_slot_sql(server.slot_name),
                       drop_publication_sql=drop_publication_sql(server.publication_name))
    return render(request, "dashboard/delete.html", context)


@require_safe
@role_required(VIEWER)
def idle_slots(request):
    """The overview's warning: inactive replication slots of stored PostgreSQL connectors, retaining WAL."""
    return render(request, "dashboard/_idle_slots.html", {"slots": slots.idle_slots()})


@require_POST
@role_required(ADMIN)
def connector_clone(request, name):
    original = get_object_or_404(Connector, name=name)
    new_name = request.POST.get("name", "").strip()
    topic_prefix = request.POST.get("topic_prefix", "").strip() or new_name
    try:
        clone = services.clone_connector(original, new_name, topic_prefix, user=request.user, source=SOURCE)
    except services.ServiceError as error:
        messages.error(request, f"Not cloned: {error}")
        return redirect("dashboard:connector", name=name)
    messages.success(request, f"Connector {clone.name} created from {name}, stopped: review it, then resume it.")
    return redirect("dashboard:connector-edit", name=clone.name)


@require_safe
@role_required(VIEWER)
def connector_export(request, name):
    """The configuration in Kafka Connect's shape ({"name", "config"}, secrets masked): POST it to
    /connect/connectors (after filling the secrets in) to recreate the connector. ?download=1 saves it."""
    connector = get_object_or_404(Connector, name=name)
    response = JsonResponse({"name": connector.name, "config": shapes.config(connector)},
                            json_dumps_params={"indent": 2, "sort_keys": True})
    if request.GET.get("download"):
        response["Content-Disposition"] = f'attachment; filename="{connector.name}.json"'
    return response


@require_safe
@role_required(ADMIN)
def connector_offsets(request, name):
    connector = get_object_or_404(Connector.objects.prefetch_related("replica_sets"), name=name)
    try:
        records, error = services.read_offsets(connector), None
    except services.Unavailable as problem:
        records, error = {}, str(problem)
    try:
        running = services.running_pipelines(connector)
    except services.Unavailable:
        running = None
    return render(request, "dashboard/offsets.html", {
        "connector": connector,
        "topic": offsets_topic(connector)[0],
        "offsets": [describe(records[rs]) for rs in sorted(records)],
        "replica_sets": (services.known_replica_sets(connector, records) if connector.source == SourceKind.MONGODB
                         else services.partition_names(connector)),
        "running": running,
        "modes": RESET_MODES if connector.source == SourceKind.MONGODB else PARTITION_RESET_MODES,
        "terms": terms_for(connector),
        "error": error,
        **_roles(request),
    })


@require_safe
def metrics(request):
    """Prometheus: a viewer's API token (`Authorization: Bearer <token>`) or a logged-in session."""
    user = metrics_user(request)
    if user is None:
        response = HttpResponse("authentication required: Authorization: Bearer <API token>\n", status=401,
                                content_type="text/plain")
        response["WWW-Authenticate"] = 'Bearer realm="cdc-metrics"'
        return response
    if not has_role(user, VIEWER):
        return HttpResponse("the viewer role is required\n", status=403, content_type="text/plain")
    body, content_type = prometheus.exposition(request.headers.get("Accept", ""))
    response = HttpResponse(body, content_type=content_type)
    response["Vary"] = "Accept"
    return response
