"""The Spark jobs API and pages without Spark: roles (script jobs are admin-only), what non-admins may ask for,
the arguments a run gets, masking, cancelling a queued run, the supervisor reaping a run whose worker died."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from tests.api_support import client_for, make_user
from web.connectors.models import AuditEntry
from web.sparkjobs import services
from web.sparkjobs.models import JobDefinition, JobRun, RunLogLine, RunStatus

pytestmark = pytest.mark.django_db

STATS = {"name": "counts", "template": "stats", "topics": ["shop.inventory.orders"], "arguments": {"window": "1 hour"}}
SCRIPT = {"name": "custom", "template": "script", "script": "result = spark.range(3)"}


@pytest.fixture
def dispatched(monkeypatch):
    """Runs sent to the broker (the Celery send itself is covered by the integration tests)."""
    sent = []
    monkeypatch.setattr(services, "dispatch", sent.append)
    return sent


@pytest.fixture
def clients(django_user_model):
    return {role: client_for(make_user(django_user_model, role)) for role in (None, "none", "viewer", "operator",
                                                                             "admin")}


def _job(body=STATS, **extra) -> JobDefinition:
    values = {**body, **extra}
    return JobDefinition.objects.create(**values)


def test_every_role_gets_what_it_may(clients, dispatched, django_capture_on_commit_callbacks):
    stats, script = _job(), _job(SCRIPT)
    expected_reads = {None: 401, "none": 403, "viewer": 200, "operator": 200, "admin": 200}
    for role, code in expected_reads.items():
        for url in ("/api/spark/jobs/", f"/api/spark/jobs/{stats.name}/", "/api/spark/runs/"):
            assert clients[role].get(url).status_code == code, (role, url)
    assert clients["viewer"].post("/api/spark/jobs/", {**STATS, "name": "v"}, format="json").status_code == 403
    assert clients["viewer"].post(f"/api/spark/jobs/{stats.name}/run/").status_code == 403

    assert clients["operator"].post("/api/spark/jobs/", {**STATS, "name": "op"}, format="json").status_code == 201
    refused = clients["operator"].post("/api/spark/jobs/", {**SCRIPT, "name": "op-script"}, format="json")
    assert refused.status_code == 403 and "admin" in refused.json()["detail"]
    assert clients["operator"].patch(f"/api/spark/jobs/{script.name}/", {"description": "x"},
                                     format="json").status_code == 403
    assert clients["operator"].post(f"/api/spark/jobs/{script.name}/run/").status_code == 403
    assert clients["operator"].delete(f"/api/spark/jobs/{script.name}/").status_code == 403
    assert clients["admin"].post("/api/spark/jobs/", {**SCRIPT, "name": "adm-script"}, format="json").status_code \
        == 201

    with django_capture_on_commit_callbacks(execute=True):
        launched = clients["operator"].post(f"/api/spark/jobs/{stats.name}/run/")
    assert launched.status_code == 202 and launched.json()["status"] == "queued"
    assert dispatched == [launched.json()["id"]]
    with django_capture_on_commit_callbacks(execute=True):
        script_run = clients["admin"].post(f"/api/spark/jobs/{script.name}/run/").json()
    assert clients["operator"].post(f"/api/spark/runs/{script_run['id']}/cancel/").status_code == 403
    assert clients["viewer"].post(f"/api/spark/runs/{launched.json()['id']}/cancel/").status_code == 403
    assert clients["operator"].post(f"/api/spark/runs/{launched.json()['id']}/cancel/").status_code == 202
    actions = list(AuditEntry.objects.filter(target=f"spark-job:{stats.name}").values_list("action", "username"))
    assert actions == [("spark.cancel", "user-operator"), ("spark.run", "user-operator")]
    created = AuditEntry.objects.get(target="spark-job:op")
    assert created.action == "spark.create" and created.after["template"] == "stats"


@pytest.mark.parametrize(("body", "field"), [
    ({**STATS, "arguments": {"output_path": "/etc/cdc"}}, "arguments.output_path"),
    ({**STATS, "arguments": {"output_path": "../other-job"}}, "arguments.output_path"),
    ({**STATS, "arguments": {"output_path": "s3a://bucket/x"}}, "arguments.output_path"),
])
def test_operators_cannot_write_outside_their_folder(clients, body, field):
    response = clients["operator"].post("/api/spark/jobs/", body, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()
    admin = clients["admin"].post("/api/spark/jobs/", body, format="json")
    assert admin.status_code == 201, admin.json()
    assert admin.json()["restricted"] is False


@pytest.mark.parametrize("sql", [
    "INSERT OVERWRITE DIRECTORY '/tmp/x' SELECT 1",
    "SELECT java_method('java.lang.System', 'getenv', 'X')",
    "SELECT `reflect`('java.lang.System', 'getProperty', 'user.name')",
    "CREATE TEMP VIEW f USING text OPTIONS (path '/etc/passwd'); SELECT * FROM f",
    "SELECT '/*'; CREATE TEMPORARY VIEW f USING text OPTIONS (path '/k'); SELECT value, '*/' FROM f",
    "SET spark.sql.runSQLOnFiles=true",
])
def test_sql_is_one_query_for_everyone(clients, sql):
    """The early check at saving (the job's own check on Spark's parse tree is the one that decides)."""
    for role in ("operator", "admin"):
        response = clients[role].post("/api/spark/jobs/", {**STATS, "template": "sql", "arguments": {"sql": sql}},
                                      format="json")
        assert response.status_code == 400, (role, response.json())
        assert "only one read-only query over the job's views is allowed" in response.json()["arguments.sql"][0]


@pytest.mark.parametrize(("body", "field"), [
    ({**STATS, "topics": []}, "topics"),
    ({**STATS, "template": "sql", "arguments": {}}, "arguments.sql"),
    ({**STATS, "template": "sql", "mode": "stream", "arguments": {"sql": "SELECT 1"}}, "mode"),
    ({**STATS, "arguments": {"topics": ["x"]}}, "arguments.topics"),
    ({**STATS, "arguments": {"time_field": "wall"}}, "arguments.time_field"),
])
def test_bad_definitions_are_refused_with_the_field_named(clients, body, field):
    response = clients["operator"].post("/api/spark/jobs/", body, format="json")
    assert response.status_code == 400 and field in response.json(), response.json()


def test_a_run_gets_paths_under_the_output_root_and_the_platform_kafka(clients, settings, tmp_path,
                                                                         dispatched):
    settings.SPARK_OUTPUT_ROOT = str(tmp_path)
    settings.KAFKA_BOOTSTRAP_SERVERS = "kafka-a:9092"
    clients["operator"].post("/api/spark/jobs/", {"name": "state", "template": "latest_state",
                                                  "topics": ["t1"]}, format="json")
    clients["operator"].post("/api/spark/jobs/", {"name": "live", "template": "latest_state", "mode": "stream",
                                                  "topics": ["t1"], "arguments": {"output_path": "current"}},
                             format="json")
    batch = clients["operator"].post("/api/spark/jobs/state/run/").json()
    assert batch["arguments"] == {"topics": ["t1"], "output_path": str(tmp_path / "state" / f"run-{batch['id']}"),
                                  "bootstrap_servers": "kafka-a:9092"}
    stream = clients["operator"].post("/api/spark/jobs/live/run/").json()
    assert stream["arguments"]["mode"] == "stream"
    assert stream["arguments"]["output_path"] == str(tmp_path / "live" / "current")
    assert stream["arguments"]["checkpoint_path"] == str(tmp_path / "live" / "checkpoint")


def test_kafka_secrets_are_masked_and_kept_when_sent_back(clients):
    options = {"security.protocol": "SASL_SSL", "sasl.jaas.config": "PlainLoginModule password='hunter2';"}
    created = clients["operator"].post("/api/spark/jobs/", {**STATS, "arguments": {"kafka_options": options}},
                                       format="json")
    assert created.status_code == 201
    shown = clients["viewer"].get("/api/spark/jobs/counts/").json()["arguments"]["kafka_options"]
    assert shown == {"security.protocol": "SASL_SSL", "sasl.jaas.config": "********"}
    assert "hunter2" not in clients["viewer"].get("/spark/jobs/counts/").content.decode()
    clients["operator"].patch("/api/spark/jobs/counts/", {"arguments": {"kafka_options": shown}}, format="json")
    assert JobDefinition.objects.get(name="counts").arguments["kafka_options"] == options


@pytest.mark.parametrize("elsewhere", [{"bootstrap_servers": "attacker.example:9092"}, {}])
def test_a_stored_kafka_secret_is_never_kept_for_other_servers(clients, elsewhere):
    """An operator who may edit a job but was never told its SASL password cannot point the job at a Kafka of their
    own and send the mask back: the stored secret would go there with the next run (or the tables page's lag)."""
    options = {"security.protocol": "SASL_SSL", "sasl.jaas.config": "PlainLoginModule password='hunter2';"}
    stored = {"bootstrap_servers": "kafka.internal:9093", "kafka_options": options}
    assert clients["admin"].post("/api/spark/jobs/", {**STATS, "arguments": stored}, format="json").status_code == 201
    shown = clients["operator"].get("/api/spark/jobs/counts/").json()["arguments"]["kafka_options"]
    moved = clients["operator"].patch("/api/spark/jobs/counts/",
                                      {"arguments": {**elsewhere, "kafka_options": shown}}, format="json")
    assert moved.status_code == 400
    assert "sasl.jaas.config" in str(moved.json()) and "give it again" in str(moved.json())
    assert JobDefinition.objects.get(name="counts").arguments == stored
    # given again, the secret is the editor's own: it may go where they say
    again = {"bootstrap_servers": "kafka.other:9093", "kafka_options": {**options, "sasl.jaas.config": "x"}}
    assert clients["operator"].patch("/api/spark/jobs/counts/", {"arguments": again},
                                     format="json").status_code == 200
    # the same servers keep it
    kept = clients["operator"].patch("/api/spark/jobs/counts/", {"arguments": {
        "bootstrap_servers": "kafka.other:9093", "kafka_options": {**options, "sasl.jaas.config": "********"}}},
        format="json")
    assert kept.status_code == 200, kept.content
    assert JobDefinition.objects.get(name="counts").arguments["kafka_options"]["sasl.jaas.config"] == "x"


def test_cancelling_a_queued_run_ends_it_and_an_ended_run_cannot_be_cancelled(clients, dispatched):
    run = services.launch(_job(), None)
    answer = clients["operator"].post(f"/api/spark/runs/{run.pk}/cancel/")
    assert answer.status_code == 202 and answer.json()["status"] == "cancelled"
    assert answer.json()["cancel_requested_by"] == "user-operator"
    again = clients["operator"].post(f"/api/spark/runs/{run.pk}/cancel/")
    assert again.status_code == 409 and "already ended" in again.json()["detail"]


def test_a_run_whose_worker_stopped_reporting_is_marked_failed(settings, dispatched):
    settings.SPARK_HEARTBEAT_TIMEOUT_SECONDS = 60
    definition = _job()
    now = timezone.now()
    lost = JobRun.objects.create(definition=definition, template="stats", status=RunStatus.RUNNING,
                                 worker="w1@host", heartbeat_at=now - timedelta(seconds=61))
    alive = JobRun.objects.create(definition=definition, template="stats", status=RunStatus.RUNNING,
                                  worker="w2@host", heartbeat_at=now - timedelta(seconds=5))
    assert services.reap_stale(now) == [lost.pk]
    lost.refresh_from_db()
    alive.refresh_from_db()
    assert lost.status == RunStatus.FAILED and "w1@host" in lost.error and lost.finished_at
    assert alive.status == RunStatus.RUNNING
    assert services.reap_stale(now) == []


def test_a_run_no_worker_started_within_the_queue_timeout_is_marked_failed(settings, dispatched):
    settings.SPARK_QUEUE_TIMEOUT_SECONDS = 600
    definition = _job()
    now = timezone.now()
    forgotten = JobRun.objects.create(definition=definition, template="stats", status=RunStatus.QUEUED)
    waiting = JobRun.objects.create(definition=definition, template="stats", status=RunStatus.QUEUED)
    JobRun.objects.filter(pk=forgotten.pk).update(created_at=now - timedelta(seconds=601))
    JobRun.objects.filter(pk=waiting.pk).update(created_at=now - timedelta(seconds=30))
    assert services.reap_stale(now) == [forgotten.pk]
    forgotten.refresh_from_db()
    waiting.refresh_from_db()
    assert forgotten.status == RunStatus.FAILED and "'spark' queue" in forgotten.error
    assert forgotten.error_type == "never_started" and forgotten.finished_at
    assert waiting.status == RunStatus.QUEUED
    settings.SPARK_QUEUE_TIMEOUT_SECONDS = 0
    JobRun.objects.filter(pk=waiting.pk).update(created_at=now - timedelta(days=2))
    assert services.reap_stale(now) == []


def test_the_log_is_read_after_a_sequence_number(clients):
    run = JobRun.objects.create(definition=_job(), template="stats", status=RunStatus.RUNNING)
    RunLogLine.objects.bulk_create([RunLogLine(run=run, seq=i, stream="stderr", text=f"line {i}")
                                    for i in range(1, 6)])
    page = clients["viewer"].get(f"/api/spark/runs/{run.pk}/log/?after=3").json()
    assert page["last"] == 5 and [line["text"] for line in page["lines"]] == ["line 4", "line 5"]
    assert clients["viewer"].get(f"/api/spark/runs/{run.pk}/log/?after=5").json() == {
        "run": run.pk, "status": "running", "last": 5, "lines": []}


def test_a_job_with_a_running_run_cannot_be_deleted(clients):
    definition = _job()
    JobRun.objects.create(definition=definition, template="stats", status=RunStatus.RUNNING)
    assert clients["operator"].delete("/api/spark/jobs/counts/").status_code == 409
    definition.runs.update(status=RunStatus.SUCCEEDED)
    assert clients["operator"].delete("/api/spark/jobs/counts/").status_code == 204


def test_pages_follow_the_roles(clients, django_user_model):
    _job()
    _job(SCRIPT)
    viewer, operator, admin = (make_user(django_user_model, r) for r in ("v2", "operator2", "admin2"))
    from django.test import Client

    def page(user, url):
        client = Client()
        client.force_login(user)
        return client.get(url)

    for user in (viewer, operator, admin):
        user.groups.clear()
    from django.contrib.auth.models import Group

    viewer.groups.add(Group.objects.get_or_create(name="viewer")[0])
    operator.groups.add(Group.objects.get_or_create(name="operator")[0])
    admin.groups.add(Group.objects.get_or_create(name="admin")[0])
    assert page(viewer, "/spark/").status_code == 200
    assert "Launch run" not in page(viewer, "/spark/jobs/counts/").content.decode()
    assert page(viewer, "/spark/jobs/new/").status_code == 403
    assert "Launch run" in page(operator, "/spark/jobs/counts/").content.decode()
    assert "Launch run" not in page(operator, "/spark/jobs/custom/").content.decode()
    assert page(operator, "/spark/jobs/custom/edit/").status_code == 403
    form = page(operator, "/spark/jobs/new/").content.decode()
    assert 'value="stats"' in form and 'value="script"' not in form
    assert 'value="script"' in page(admin, "/spark/jobs/new/").content.decode()


def test_a_run_launched_and_cancelled_from_the_dashboard_is_audited_as_dashboard(django_user_model, client,
                                                                                dispatched):
    """The Run and Cancel run buttons call the API with the session and X-CDC-Source, as the connectors' do."""
    stats = _job()
    client.force_login(make_user(django_user_model, "operator"))
    launched = client.post(f"/api/spark/jobs/{stats.name}/run/", HTTP_X_CDC_SOURCE="dashboard")
    assert launched.status_code in (201, 202), launched.content
    run_id = launched.json()["id"]
    assert client.post(f"/api/spark/runs/{run_id}/cancel/", HTTP_X_CDC_SOURCE="dashboard").status_code in (200, 202)
    sources = dict(AuditEntry.objects.filter(target=f"spark-job:{stats.name}").values_list("action", "source"))
    assert sources == {"spark.run": "dashboard", "spark.cancel": "dashboard"}
