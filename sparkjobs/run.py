"""The single entry point of every Spark job of the platform.

    spark-submit [spark options] sparkjobs/run.py TEMPLATE --args-json '{...}' [--result-file PATH]
    python -m sparkjobs.submit TEMPLATE --args-json '{...}'     # builds that spark-submit command

Templates: latest_state, stats, sql, script (`sparkjobs.templates`). Output: ``CDCJOB {json}`` lines on
stdout, the last one with ``status`` succeeded / failed / cancelled. Exit status: 0 succeeded, 1 failed,
2 invalid arguments, 143 cancelled by SIGTERM (130 by SIGINT). The contract is in docs/spark.md.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import threading
import time
import traceback
from pathlib import Path

if __name__ == "__main__":  # run as a file (spark-submit): make the package importable, unshadow its modules
    _here = str(Path(__file__).resolve().parent)
    sys.path[:] = [entry for entry in sys.path if os.path.abspath(entry or ".") != _here]
    sys.path.insert(0, str(Path(_here).parent))

from sparkjobs import output  # noqa: E402
from sparkjobs.errors import InvalidArguments, JobCancelled, JobError, describe  # noqa: E402

EXIT_OK, EXIT_FAILED, EXIT_INVALID = 0, 1, 2
EXIT_CANCELLED = {signal.SIGTERM: 143, signal.SIGINT: 130}
CANCEL_GRACE_S = 20.0


class _Usage(argparse.ArgumentParser):
    def error(self, message):  # a usage error is a failed run like any other, not argparse's exit
        raise InvalidArguments(message)


def parse_argv(argv: list[str]) -> tuple[str, dict, argparse.Namespace]:
    from sparkjobs.templates import TEMPLATES

    parser = _Usage(prog="sparkjobs/run.py", add_help=False)
    parser.add_argument("template")
    parser.add_argument("--args-json", default=None)
    parser.add_argument("--args-file", default=None)
    parser.add_argument("--result-file", default=os.environ.get("CDCJOB_RESULT_FILE"))
    parser.add_argument("--master", default=None)
    options = parser.parse_args(argv)
    if options.template not in TEMPLATES:
        raise InvalidArguments(f"unknown template {options.template!r}; choose one of {', '.join(TEMPLATES)}")
    if options.args_json is not None and options.args_file is not None:
        raise InvalidArguments("give --args-json or --args-file, not both")
    text = options.args_json
    if options.args_file is not None:
        try:
            text = Path(options.args_file).read_text(encoding="utf-8")
        except OSError as error:
            raise InvalidArguments(f"cannot read --args-file: {error}") from None
    try:
        args = json.loads(text) if text else {}
    except ValueError as error:
        raise InvalidArguments(f"the job arguments are not valid JSON: {error}") from None
    if not isinstance(args, dict):
        raise InvalidArguments("the job arguments must be a JSON object")
    return options.template, args, options


def _result_file(argv: list[str]) -> str | None:
    """--result-file, found before the rest is parsed, so even a bad command line leaves its outcome there."""
    for index, item in enumerate(argv):
        if item == "--result-file" and index + 1 < len(argv):
            return argv[index + 1]
        if item.startswith("--result-file="):
            return item.split("=", 1)[1]
    return os.environ.get("CDCJOB_RESULT_FILE")


class _Signals:
    """SIGTERM/SIGINT raise JobCancelled in the main thread; a watchdog ends the process if cleanup hangs."""

    def __init__(self, cancelled: threading.Event):
        self.cancelled = cancelled
        self.signum: int | None = None
        self.previous = {}

    def install(self) -> None:
        for signum in EXIT_CANCELLED:
            self.previous[signum] = signal.signal(signum, self._handle)

    def restore(self) -> None:
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)

    def _handle(self, signum, frame):
        if self.signum is not None:
            return
        self.signum = signum
        self.cancelled.set()
        watchdog = threading.Timer(CANCEL_GRACE_S, os._exit, args=(EXIT_CANCELLED[signum],))
        watchdog.daemon = True
        watchdog.start()
        raise JobCancelled(signum)


def _stop_spark(spark, *, owned: bool, timeout: float) -> None:
    """Stop streams and jobs (and the session if we made it) without ever blocking past ``timeout``."""

    def stop():
        try:
            for query in spark.streams.active:
                query.stop()
            spark.sparkContext.cancelAllJobs()
            if owned:
                spark.stop()
        except Exception:  # noqa: BLE001, S110 - the JVM may already be gone
            pass

    worker = threading.Thread(target=stop, name="cdcjob-stop", daemon=True)
    worker.start()
    worker.join(timeout)


def main(argv: list[str] | None = None, *, spark=None, stdout=None, install_signals: bool = False) -> int:
    """Run one job; returns the exit status. ``spark``: an existing session (tests); else one is built."""
    argv = sys.argv[1:] if argv is None else argv
    reporter = output.Reporter(stdout, _result_file(argv))
    started = time.monotonic()
    cancelled = threading.Event()
    signals = _Signals(cancelled)
    if install_signals:
        signals.install()
    owned = False
    progress = None
    template_name = argv[0] if argv else None
    try:
        from sparkjobs.templates import TEMPLATES, JobContext
        from sparkjobs.topics import TopicSource

        template_name, args, options = parse_argv(argv)
        template = TEMPLATES[template_name]
        reporter.emit(event="started", template=template_name, pid=os.getpid())
        template.validate(args)
        source = TopicSource.from_args(args, require=template.reads_topics == "required")
        topics = source.resolve() if (source.topics or source.pattern) else []
        if spark is None:
            from sparkjobs.session import DELTA_TEMPLATES, build_session

            owned = True
            spark = build_session(options.master, app_name=f"cdc-{template_name}",
                                  delta=template_name in DELTA_TEMPLATES)
        from sparkjobs.session import check_kafka_source, ship_code

        ship_code(spark)
        check_kafka_source(spark)
        context = spark.sparkContext
        reporter.emit(
            event="session",
            app_id=context.applicationId,
            master=context.master,
            spark_version=spark.version,
            topics=topics,
        )
        progress = output.StageProgress(spark, reporter)
        progress.start()
        ctx = JobContext(spark=spark, args=args, reporter=reporter, source=source, topics=topics, cancelled=cancelled)
        outcome = template.run(ctx)
        reporter.finish(
            status="succeeded",
            template=template_name,
            duration_s=round(time.monotonic() - started, 3),
            **{"rows_in": None, "rows_out": None, "output_path": None, **outcome},
        )
        return EXIT_OK
    except (JobCancelled, KeyboardInterrupt):
        signum = signals.signum or signal.SIGINT
        reporter.finish(
            status="cancelled",
            template=template_name,
            error=f"cancelled by {signal.Signals(signum).name}",
            duration_s=round(time.monotonic() - started, 3),
        )
        if spark is not None:
            _stop_spark(spark, owned=owned, timeout=CANCEL_GRACE_S / 2)
            owned = False
        return EXIT_CANCELLED[signum]
    except BaseException as error:  # noqa: BLE001 - every failure ends as one line
        if isinstance(error, SystemExit) and error.code in (None, 0):
            raise
        if not isinstance(error, JobError):
            traceback.print_exc(file=sys.stderr)
        reporter.finish(
            status="failed",
            template=template_name,
            error=describe(error),
            error_type="invalid_arguments" if isinstance(error, InvalidArguments) else type(error).__name__,
            duration_s=round(time.monotonic() - started, 3),
        )
        return EXIT_INVALID if isinstance(error, InvalidArguments) else EXIT_FAILED
    finally:
        if progress is not None:
            progress.stop()
        if owned and spark is not None:
            _stop_spark(spark, owned=True, timeout=30)
        if install_signals:
            signals.restore()


if __name__ == "__main__":
    sys.exit(main(install_signals=True))
