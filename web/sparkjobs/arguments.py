"""What a job definition may ask for, and the arguments a run is started with.

A definition stores the template's arguments as given (docs/spark.md); a run gets them completed: topics and mode
from the definition's fields, Kafka from settings, and places under SPARK_OUTPUT_ROOT/<job>/ for whatever the job
writes and names no place for. Users below admin are held to what a template job needs:

- paths (`output_path`, `checkpoint_path`) are relative, inside the job's own folder under SPARK_OUTPUT_ROOT;
- `script` jobs (arbitrary code) are for admins only (checked by the API and pages).

Everyone's `sql` is one read-only query over the job's views. The job checks that on Spark's own parse of the
statement before anything runs (sparkjobs/sqlcheck.py); saving a definition only catches the plain mistakes early
(several statements, a statement that is no query, Java reflection), without starting Spark.
"""

from __future__ import annotations

import re
from pathlib import Path, PurePosixPath
from typing import Any

from django.conf import settings

from sparkjobs.sqlcheck import RULE, SESSION_CONF, split_statements
from web.sparkjobs.models import JobDefinition, JobRun, Mode, RunTemplate, Template

PATH_ARGUMENTS = ("output_path", "checkpoint_path")
RESERVED = {"topics": "the job's topics field", "mode": "the job's mode field",
            "script_path": "the job's script field"}
STREAMING_TEMPLATES = (Template.LATEST_STATE, Template.STATS, Template.DELTA_SYNC)
MASK = "********"
_SECRET_OPTION = re.compile(r"password|secret|jaas|token|credential|key$", re.IGNORECASE)
_QUERY = re.compile(r"^[(\s]*(select|with|values|table|from)\b", re.IGNORECASE)
_REFLECTION = re.compile(r"\b(reflect|java_method|try_reflect)`?\s*\(", re.IGNORECASE)
_NAMED_ARGUMENT = re.compile(r"`(\w+)`")


class ArgumentProblem(ValueError):
    """A definition asks for something its author may not, or that the template refuses: {field: message}."""

    def __init__(self, problems: dict[str, str]):
        super().__init__("; ".join(f"{field}: {message}" for field, message in problems.items()))
        self.problems = problems


def output_root() -> Path:
    return Path(settings.SPARK_OUTPUT_ROOT)


def job_dir(name: str) -> Path:
    return output_root() / name


def _relative_path_problem(value: Any) -> str | None:
    if not isinstance(value, str) or not value.strip():
        return "must be a non-empty path"
    path = PurePosixPath(value)
    if "://" in value or path.is_absolute() or ".." in path.parts:
        return "must be a relative path inside the job's folder (other places are for admins)"
    return None


def _sql_problem(sql: Any) -> str | None:
    """The mistakes a text can show without Spark's parser (which decides, in the job)."""
    if not isinstance(sql, str) or not split_statements(sql):
        return None  # the template's own check names the missing query
    statements = split_statements(sql)
    if len(statements) > 1:
        return f"{RULE}, not {len(statements)} statements separated by `;`"
    if not _QUERY.match(statements[0]):
        return f"{RULE}: {statements[0][:60]!r} is not a query"
    if _REFLECTION.search(statements[0]):
        return f"{RULE}: Java reflection (reflect, java_method, try_reflect) is not allowed"
    return None


def check_definition(values: dict[str, Any], *, admin: bool) -> None:
    """Raises ArgumentProblem for a definition (template, mode, topics, arguments, script) its author may not save."""
    template, mode = values["template"], values.get("mode", Mode.BATCH)
    topics, arguments = values.get("topics") or [], values.get("arguments") or {}
    problems: dict[str, str] = {}
    if template == Template.SCRIPT and not admin:
        problems["template"] = "PySpark script jobs run arbitrary code: only admins may create, change or run them"
    if mode == Mode.STREAM and template not in STREAMING_TEMPLATES:
        problems["mode"] = "only latest_state, stats and delta_sync jobs can stream"
    if template == Template.DELTA_SYNC and mode != Mode.STREAM:
        problems["mode"] = "a Delta sync is a stream: choose the mode stream"
    if not isinstance(topics, list) or not all(isinstance(t, str) and t.strip() for t in topics):
        problems["topics"] = "a list of topic names"
    for key, where in RESERVED.items():
        if key in arguments and not (key == "script_path" and admin and template == Template.SCRIPT):
            problems[f"arguments.{key}"] = f"set by {where}, not in the arguments"
    if not admin:
        for key in PATH_ARGUMENTS:
            if key in arguments and (problem := _relative_path_problem(arguments[key])):
                problems[f"arguments.{key}"] = problem
    if template == Template.SQL and (problem := _sql_problem(arguments.get("sql"))):
        problems["arguments.sql"] = problem
    if template == Template.SCRIPT and not (values.get("script") or "").strip() and not arguments.get("script_path"):
        problems["script"] = "the PySpark code to run"
    if not problems:
        try:
            _template_check(values)
        except ArgumentProblem as error:
            problems.update(error.problems)
    if problems:
        raise ArgumentProblem(problems)


def _template_check(values: dict[str, Any]) -> None:
    """The template's own validation, on the arguments a run would get (placeholders for the run's own paths)."""
    from sparkjobs.errors import InvalidArguments
    from sparkjobs.templates import TEMPLATES

    definition = JobDefinition(name=values.get("name") or "job", template=values["template"],
                               mode=values.get("mode", Mode.BATCH), topics=values.get("topics") or [],
                               arguments=values.get("arguments") or {}, script=values.get("script") or "")
    args = run_arguments(definition, run_id=0)
    if definition.template == Template.SCRIPT:  # its file exists on the worker only: check the rest
        if not isinstance(args.get("script_args", {}), dict):
            raise ArgumentProblem({"arguments.script_args": "`script_args` must be a JSON object"})
        return
    if not args.get("topics") and not args.get("topic_pattern") and TEMPLATES[definition.template].reads_topics \
            == "required":
        raise ArgumentProblem({"topics": "this template reads topics: name at least one (or arguments.topic_pattern)"})
    try:
        TEMPLATES[definition.template].validate(args)
    except InvalidArguments as error:
        named = _NAMED_ARGUMENT.search(str(error))
        field = f"arguments.{named.group(1)}" if named else "arguments"
        raise ArgumentProblem({field: str(error)}) from None


def run_arguments(definition: JobDefinition, run_id: int) -> dict[str, Any]:
    """The arguments of run `run_id` of `definition` (what spark-submit gets, without the script file's path)."""
    args = dict(definition.arguments or {})
    folder = job_dir(definition.name)
    if definition.topics:
        args["topics"] = list(definition.topics)
    if definition.mode == Mode.STREAM:
        args["mode"] = Mode.STREAM.value
        args.setdefault("output_path", "stream")
        args.setdefault("checkpoint_path", "checkpoint")
    elif definition.template == Template.LATEST_STATE:
        args.setdefault("output_path", f"run-{run_id}")
    for key in PATH_ARGUMENTS:
        value = args.get(key)
        if isinstance(value, str) and value and "://" not in value and not PurePosixPath(value).is_absolute():
            args[key] = str(folder / value)
    args.setdefault("bootstrap_servers", settings.KAFKA_BOOTSTRAP_SERVERS)
    return args


def spark_conf(run: JobRun) -> dict[str, str]:
    """Spark settings a run gets beyond the defaults: the session of an SQL run (and of a Delta tables query)
    substitutes no variables and reads no file by its path from the start (the job sets them too, before it checks
    its query)."""
    return dict(SESSION_CONF) if run.template in (Template.SQL, RunTemplate.DELTA_QUERY) else {}


def masked(arguments: dict[str, Any]) -> dict[str, Any]:
    """Arguments as shown to people: secret-looking Kafka options (SASL passwords, JAAS configs) masked."""
    options = arguments.get("kafka_options")
    if not isinstance(options, dict):
        return dict(arguments)
    return {**arguments, "kafka_options": {key: MASK if _SECRET_OPTION.search(key) else value
                                           for key, value in options.items()}}


def unmask(new: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    """A masked value sent back (GET → edit → PUT) keeps the stored secret, for the Kafka it was stored with only:
    with other `bootstrap_servers` the secret must be given again (ArgumentProblem)."""
    options, old = new.get("kafka_options"), stored.get("kafka_options") or {}
    if not isinstance(options, dict):
        return new
    kept = sorted(key for key, value in options.items() if value == MASK and key in old)
    default = settings.KAFKA_BOOTSTRAP_SERVERS
    if kept and (new.get("bootstrap_servers") or default) != (stored.get("bootstrap_servers") or default):
        raise ArgumentProblem({"arguments.kafka_options": (
            f"{', '.join(kept)} stored for {stored.get('bootstrap_servers') or default} cannot be kept for other "
            "bootstrap_servers: a stored secret goes only to the Kafka it was given for; give it again")})
    return {**new, "kafka_options": {key: old.get(key, value) if value == MASK else value
                                     for key, value in options.items()}}
