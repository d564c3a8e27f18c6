"""The Celery task of a Spark run (queue `spark`): spark-submit, followed to the end, recorded in the database.

`run_job(run_id)` claims a queued `JobRun`, starts `sparkjobs.submit.command(...)` with `--master` from
SPARK_MASTER, and while the job runs stores once a second its new log lines (Spark's stderr and the job's progress
lines), its current step and Spark stage, its counters and a heartbeat. A cancel request (the run's
`cancel_requested_at`) or the batch time limit SIGTERMs the driver; the final `CDCJOB` line (or, without one, the
exit status and the last log line) becomes the run's outcome. Whatever happens, the run ends in succeeded, failed
or cancelled: a failure to start is a failed run, and a worker that dies leaves a heartbeat that stops, which the
supervisor turns into a failed run (`web.sparkjobs.services.reap_stale`).
"""

from __future__ import annotations

import json
import logging
import shutil
import socket
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from cdcplatform.celery import app
from sparkjobs.errors import JobError, describe
from web.sparkjobs.arguments import output_root, spark_conf
from web.sparkjobs.models import JobRun, RunLogLine, RunStatus, Template
from workers.spark_process import Line, SparkProcess

log = logging.getLogger(__name__)

FLUSH_S = 1.0
LINE_LIMIT = 4000
EXIT_GRACE_S = 10.0  # output pipes still open this long after spark-submit exited: a leftover child holds them
RESULT_FIELDS = ("duration_s", "rows_in", "rows_out", "output_path", "preview", "error", "error_type")


@app.task(name="workers.spark.run_job", bind=True)
def run_job(self, run_id: int) -> dict[str, Any]:
    return RunFollower(run_id, worker=self.request.hostname or socket.gethostname(),
                       task_id=self.request.id or "").run()


def _event_text(event: dict[str, Any]) -> str:
    if "status" in event:
        counts = [f"{name.replace('_', ' ')} {event[name]}" for name in ("rows_in", "rows_out")
                  if event.get(name) is not None]
        detail = event.get("error") or ", ".join(counts) or "done"
        return f"{event['status']}: {detail}"
    kind = event.get("event", "?")
    if kind == "step":
        return f"step: {event.get('name')}"
    rest = {key: value for key, value in event.items() if key != "event"}
    return f"{kind}: {json.dumps(rest, ensure_ascii=False, separators=(', ', ': '))}"


class RunFollower:
    def __init__(self, run_id: int, *, worker: str, task_id: str):
        self.run_id = run_id
        self.worker = worker
        self.task_id = task_id
        self.pending: list[tuple[str, str]] = []
        self.seq = 0
        self.progress: dict[str, Any] = {}
        self.fields: dict[str, Any] = {}  # run fields changed since the last flush
        self.last_stderr = ""
        self.timed_out = False
        self.lost = False  # the run was ended by someone else (the supervisor) while we ran it

    # --- lifecycle -------------------------------------------------------------------------------------------
    def run(self) -> dict[str, Any]:
        now = timezone.now()
        claimed = JobRun.objects.filter(pk=self.run_id, status=RunStatus.QUEUED).update(
            status=RunStatus.RUNNING, started_at=now, heartbeat_at=now, worker=self.worker, task_id=self.task_id,
            master=settings.SPARK_MASTER)
        if not claimed:  # cancelled while queued, or a duplicate delivery
            return {"run": self.run_id, "status": "not queued"}
        run = JobRun.objects.get(pk=self.run_id)
        folder = output_root() / ".runs" / str(run.pk)
        try:
            argv, env = self._command(run, folder)
        except (JobError, OSError, ValueError) as error:
            self._log("launcher", f"could not start spark-submit: {describe(error)}")
            return self._end(RunStatus.FAILED, {"error": describe(error), "error_type": "submit"}, None)
        self._log("launcher", f"spark-submit --master {settings.SPARK_MASTER} {run.template} "
                              f"(run {run.pk} on {self.worker})")
        try:
            process = SparkProcess(argv, env, cwd=str(folder))  # env: allow-listed by command()
        except OSError as error:
            return self._end(RunStatus.FAILED, {"error": f"could not start spark-submit: {error}",
                                                "error_type": "submit"}, None)
        self.fields["pid"] = process.pid
        try:
            code = self._follow(process, run)
        finally:
            process.kill()
        final = process.final or self._result_file(folder)
        shutil.rmtree(folder, ignore_errors=True)
        return self._outcome(final, code)

    def _command(self, run: JobRun, folder: Path) -> tuple[list[str], dict[str, str]]:
        from sparkjobs.submit import command

        folder.mkdir(parents=True, exist_ok=True)
        args = dict(run.arguments)
        if run.template == Template.SCRIPT and not args.get("script_path"):
            script = folder / "script.py"
            script.write_text(run.script, encoding="utf-8")
            args["script_path"] = str(script)
        return command(run.template, args, master=settings.SPARK_MASTER, result_file=str(folder / "result.json"),
                       conf=spark_conf(run))

    def _follow(self, process: SparkProcess, run: JobRun) -> int:
        started = time.monotonic()
        exited_at = None
        next_flush = 0.0
        while True:
            for line in process.lines(timeout=0.5):
                self._take(line, process)
            now = time.monotonic()
            if now >= next_flush:
                next_flush = now + FLUSH_S
                if self._flush() == "ended" or self._cancel_requested():
                    process.cancel()
            if run.mode == "batch" and now - started > settings.SPARK_RUN_TIMEOUT_SECONDS and not self.timed_out:
                self.timed_out = True
                self._log("launcher", f"still running after {settings.SPARK_RUN_TIMEOUT_SECONDS:.0f} s: cancelling")
                process.cancel()
            if process.poll() is not None:
                exited_at = exited_at or now
                if process.output_closed or now - exited_at > EXIT_GRACE_S:
                    break
        code = process.finish()
        for line in process.lines(timeout=0.1):
            self._take(line, process)
        return code

    # --- what the job says --------------------------------------------------------------------------------------
    def _take(self, line: Line, process: SparkProcess) -> None:
        if line.event is None:
            self.last_stderr = line.text
            self._log("stderr", line.text)
            return
        event = line.event
        kind = event.get("event")
        if kind == "stage":
            self.progress["stage"] = {key: event.get(key) for key in
                                      ("stage_id", "name", "tasks", "completed", "active", "failed")}
            return
        self._log("event", _event_text(event))
        if kind == "started":
            self.fields["driver_pid"] = process.driver_pid
        elif kind == "session":
            self.fields.update(app_id=str(event.get("app_id") or ""), master=str(event.get("master") or ""))
            self.progress["topics"] = event.get("topics")
        elif kind == "step":
            self.progress["step"] = event.get("name")
        elif kind == "read":
            self.fields["rows_in"] = event.get("rows_in")
        elif kind == "batch":
            self.progress["batches"] = self.progress.get("batches", 0) + 1
            self.progress["last_batch"] = {key: event.get(key) for key in ("batch_id", "rows_in", "rows_out")}
            self.progress["rows_in"] = self.progress.get("rows_in", 0) + int(event.get("rows_in") or 0)
        elif kind == "stream":
            self.progress["stream"] = {key: event.get(key) for key in ("query_id", "run_id", "checkpoint_path")}

    def _log(self, stream: str, text: str) -> None:
        if len(text) > LINE_LIMIT:
            text = text[: LINE_LIMIT - 1] + "…"
        self.pending.append((stream, text))

    def _flush(self, final: dict[str, Any] | None = None) -> str:
        """Stores new log lines, progress and a heartbeat; "ended" when the run is no longer ours to update."""
        lines = [RunLogLine(run_id=self.run_id, seq=self.seq + index + 1, stream=stream, text=text)
                 for index, (stream, text) in enumerate(self.pending)]
        values = {**self.fields, "progress": dict(self.progress), "heartbeat_at": timezone.now(), **(final or {})}
        try:
            if lines:
                RunLogLine.objects.bulk_create(lines)
                self.seq += len(lines)
                self.pending.clear()
                keep = settings.SPARK_LOG_LINES
                if self.seq > keep:
                    RunLogLine.objects.filter(run_id=self.run_id, seq__lte=self.seq - keep).delete()
            updated = JobRun.objects.filter(pk=self.run_id, status=RunStatus.RUNNING).update(**values)
        except DatabaseError as error:  # keep following the job; the heartbeat resumes with the database
            log.warning("spark run %s: cannot store progress: %s", self.run_id, error)
            return "error"
        self.fields = {}
        if not updated:
            self.lost = True
            return "ended"
        return "ok"

    def _cancel_requested(self) -> bool:
        try:
            return JobRun.objects.filter(pk=self.run_id, cancel_requested_at__isnull=False).exists()
        except DatabaseError:
            return False

    @staticmethod
    def _result_file(folder: Path) -> dict[str, Any] | None:
        try:
            return json.loads((folder / "result.json").read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None

    # --- the outcome --------------------------------------------------------------------------------------------
    def _outcome(self, final: dict[str, Any] | None, code: int) -> dict[str, Any]:
        cancelled = self._cancel_requested()
        if final is not None and final.get("status") == "succeeded":
            return self._end(RunStatus.SUCCEEDED, final, code)
        if self.timed_out:
            limit = settings.SPARK_RUN_TIMEOUT_SECONDS
            return self._end(RunStatus.FAILED, {**(final or {}), "error_type": "timeout",
                                                "error": f"ran longer than SPARK_RUN_TIMEOUT_SECONDS ({limit:.0f} s)"},
                             code)
        if cancelled or (final is not None and final.get("status") == "cancelled"):
            return self._end(RunStatus.CANCELLED, {**(final or {}), "error": (final or {}).get("error")
                                                   or f"cancelled (spark-submit exit status {code})"}, code)
        if final is not None:
            return self._end(RunStatus.FAILED, final, code)
        detail = f": {self.last_stderr}" if self.last_stderr else ""
        return self._end(RunStatus.FAILED, {"error": f"spark-submit exited with status {code} without reporting a "
                                                    f"result{detail}", "error_type": "exit"}, code)

    def _end(self, status: str, final: dict[str, Any], code: int | None) -> dict[str, Any]:
        values = {key: final[key] for key in RESULT_FIELDS if final.get(key) is not None}
        values["error"] = str(values.get("error") or "")[:10_000]
        values["output_path"] = str(values.get("output_path") or "")
        extra = {key: value for key, value in final.items()
                 if key not in RESULT_FIELDS and key not in ("status", "template")}
        self._log("launcher", f"run {status}" + (f" (exit status {code})" if code is not None else ""))
        ended = {**values, "result": extra, "exit_code": code, "status": status, "finished_at": timezone.now()}
        for attempt in range(5):
            outcome = self._flush(ended)
            if outcome != "error":
                break
            time.sleep(1 + attempt)
        if self.lost:
            log.warning("spark run %s was ended elsewhere; its outcome (%s) is not stored", self.run_id, status)
        return {"run": self.run_id, "status": status, "exit_code": code}
