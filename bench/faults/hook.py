"""A broker freeze in the middle of a commit (broker-stop-commit, broker-stop-snapshot): the runner, started as
`python -m bench.faults runner cfg.json --freeze-dir DIR`, is `python -m connectors run` with the sink's producer
hooked so that its next commit waits until the campaign has frozen the broker."""

from __future__ import annotations

import argparse
import time
from pathlib import Path


class CommitHook:
    """Files through which the campaign and a hooked runner meet at a commit: the campaign arms the hook, the
    runner's next `commit_transaction` reports that it is about to go out and waits until the campaign has frozen
    the broker, then goes out to the frozen broker. A broker stall in the middle of a commit, every time."""

    def __init__(self, directory: Path):
        self.directory = directory
        directory.mkdir(parents=True, exist_ok=True)
        self.armed, self.at_commit, self.frozen = (directory / n for n in ("armed", "at-commit", "frozen"))

    def arm(self) -> None:
        for path in (self.at_commit, self.frozen):
            path.unlink(missing_ok=True)
        self.armed.touch()

    def disarm(self) -> None:
        self.armed.unlink(missing_ok=True)

    def install(self) -> None:
        """In the runner's process: every producer the sink creates from now on goes through the hook."""
        import confluent_kafka

        from connectors.kafka import sink

        if not isinstance(getattr(sink, "Producer", None), type):
            raise SystemExit("bench.faults: connectors.kafka.sink creates no confluent_kafka.Producer any more; "
                             "the commit hook of the broker-stop-commit scenarios needs updating")
        hook = self

        class HookedProducer(confluent_kafka.Producer):
            def commit_transaction(self, *args):
                if hook.armed.exists() and not hook.at_commit.exists():
                    hook.at_commit.touch()
                    deadline = time.monotonic() + 30
                    while not hook.frozen.exists() and time.monotonic() < deadline:
                        time.sleep(0.005)
                return super().commit_transaction(*args)

        sink.Producer = HookedProducer


def runner_main(argv: list[str]) -> int:
    """`python -m connectors run`, with the commit hook installed."""
    parser = argparse.ArgumentParser(prog="python -m bench.faults runner")
    parser.add_argument("config")
    parser.add_argument("--freeze-dir", type=Path, required=True)
    parser.add_argument("--bootstrap-servers", required=True)
    args = parser.parse_args(argv)
    CommitHook(args.freeze_dir).install()
    from connectors.__main__ import main as connectors_main

    return connectors_main(["run", args.config, "--bootstrap-servers", args.bootstrap_servers])
