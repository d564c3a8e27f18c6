"""The spark-submit command line of a job (`sparkjobs.submit.command`). The command runs for real in
tests/spark/test_launcher.py: the worker starts exactly this command, and a streaming run there processes its topic,
a change produced while it runs, and ends on SIGTERM with a `cancelled` line and exit status 143."""

from __future__ import annotations

from sparkjobs.submit import command


def test_the_command_runs_the_template_on_the_master_with_the_kafka_source(monkeypatch, tmp_path):
    for name in ("SPARK_KAFKA_PACKAGES", "SPARK_LOCAL_IP"):
        monkeypatch.delenv(name, raising=False)
    result_file = str(tmp_path / "result.json")
    argv, env = command("latest_state", {"topics": ["t"], "mode": "stream"}, master="local[2]",
                        result_file=result_file)
    assert argv[argv.index("--master") + 1] == "local[2]" and "--jars" in argv
    assert argv[argv.index("latest_state") + 1:] == ["--args-json", '{"topics": ["t"], "mode": "stream"}',
                                                     "--result-file", result_file]
    assert argv[argv.index("latest_state") - 1].endswith("sparkjobs/run.py")
    assert env["SPARK_LOCAL_IP"] == "127.0.0.1"
