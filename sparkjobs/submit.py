"""The spark-submit command line for a job, and ``python -m sparkjobs.submit`` to run it.

    python -m sparkjobs.submit TEMPLATE --args-json '{...}' [--master URL] [--result-file PATH]

`command()` returns ``(argv, env)`` for ``subprocess.Popen``: spark-submit with ``--master``
(argument, ``SPARK_MASTER``, else ``local[*]``), Spark's Kafka source (``--jars``, or ``--packages``
with ``SPARK_KAFKA_PACKAGES``), driver memory, the quiet log4j configuration beside this file, and
``sparkjobs/run.py`` with the template and its arguments. ``python -m sparkjobs.submit`` execs it, so
the launcher's process *is* spark-submit and its signals reach it directly.

A job never runs with the launcher's privileges: its environment is built from an allow-list (no
``SECRET_KEY``, ``DATABASE_URL``, ``CDC_ENCRYPTION_KEY``, tokens), and a launcher running as root starts it as
the unprivileged ``SPARK_JOB_USER`` (``cdc-spark``, created by scripts/install.sh) through ``setpriv``, so it
cannot read the platform's key file or database (mode 0600, owned by the platform's user).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from sparkjobs.errors import JobError
from sparkjobs.jobuser import JobUser, job_user
from sparkjobs.session import DELTA_CONF, DELTA_TEMPLATES, PACKAGE_DIR, default_master, jars_and_packages

RUN_PY = PACKAGE_DIR / "run.py"
LOG4J = PACKAGE_DIR / "log4j2.properties"
ENV_ALLOWED = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR", "JAVA_HOME", "HADOOP_CONF_DIR", "KUBECONFIG",
               "KAFKA_BOOTSTRAP_SERVERS", "VIRTUAL_ENV")
ENV_PREFIXES = ("SPARK_", "PYSPARK_", "HADOOP_", "JAVA_", "CDCJOB_")
WRITTEN_PATHS = ("output_path", "checkpoint_path")


def job_environment(env: Mapping[str, str]) -> dict[str, str]:
    """Only what Spark needs from ``env``: the platform's secrets (SECRET_KEY, DATABASE_URL, CDC_ENCRYPTION_KEY,
    REDIS_URL, tokens) stay out of reach of a job, which could print them."""
    return {key: value for key, value in env.items() if key in ENV_ALLOWED or key.startswith(ENV_PREFIXES)}


def on_loopback(master: str) -> bool:
    """A local master, or a cluster on this machine's loopback (devstack's): the driver binds to 127.0.0.1 too."""
    from urllib.parse import urlparse

    return master.startswith("local") or urlparse(master).hostname in ("127.0.0.1", "localhost")


def spark_submit_binary() -> str:
    explicit = os.environ.get("SPARK_SUBMIT")
    if explicit:
        return explicit
    spark_home = os.environ.get("SPARK_HOME")
    if spark_home and (Path(spark_home) / "bin" / "spark-submit").exists():
        return str(Path(spark_home) / "bin" / "spark-submit")
    import pyspark

    bundled = Path(pyspark.__file__).parent / "bin" / "spark-submit"
    if bundled.exists():
        return str(bundled)
    found = shutil.which("spark-submit")
    if not found:
        raise JobError("spark-submit not found: install pyspark or set SPARK_HOME")
    return found


def command(
    template: str,
    args: Mapping[str, Any],
    *,
    master: str | None = None,
    result_file: str | None = None,
    conf: Mapping[str, str] | None = None,
    driver_memory: str | None = None,
    extra: Sequence[str] = (),
) -> tuple[list[str], dict[str, str]]:
    """argv and environment of the spark-submit process that runs ``template`` with ``args``."""
    master = master or default_master()
    argv = [spark_submit_binary(), "--master", master, "--name", f"cdc-{template}"]
    delta = template in DELTA_TEMPLATES
    jars, packages = jars_and_packages(delta)
    argv += ["--packages", packages] if packages else ["--jars", ",".join(jars)]
    argv += ["--driver-memory", driver_memory or os.environ.get("SPARK_DRIVER_MEMORY", "1g")]
    settings = {
        "spark.ui.enabled": "false",
        "spark.ui.showConsoleProgress": "false",
        "spark.driver.extraJavaOptions": f"-Dlog4j2.configurationFile=file:{LOG4J}",
    }
    if delta:
        settings.update(DELTA_CONF)
    if on_loopback(master):
        settings["spark.driver.host"] = "127.0.0.1"
        settings["spark.driver.bindAddress"] = "127.0.0.1"
    settings.update(conf or {})
    for key, value in settings.items():
        argv += ["--conf", f"{key}={value}"]
    argv += list(extra)
    argv += [str(RUN_PY), template, "--args-json", json.dumps(dict(args))]
    if result_file:
        argv += ["--result-file", result_file]
    env = job_environment(os.environ)
    env.setdefault("PYSPARK_PYTHON", sys.executable)
    env.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)
    if on_loopback(master):
        env.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(PACKAGE_DIR.parent), os.environ.get("PYTHONPATH")]))
    user = job_user()
    if user is None:
        env["HOME"] = os.environ.get("HOME", "/")
        return argv, env
    user.check_can_run(env["PYSPARK_PYTHON"], str(PACKAGE_DIR.parent))
    _hand_over(user, args, result_file)
    env.update(HOME=user.home, USER=user.name, LOGNAME=user.name)
    return user.wrap(argv), env


def _hand_over(user: JobUser, args: Mapping[str, Any], result_file: str | None) -> None:
    """Makes the places the job writes writable by its user: the result file, and the folders that will hold
    ``output_path`` and ``checkpoint_path`` (created for it when missing)."""
    if result_file:
        user.own_file(Path(result_file))
    for key in WRITTEN_PATHS:
        value = args.get(key)
        if isinstance(value, str) and value and "://" not in value:
            user.writable_folder(Path(value).absolute().parent, purpose=f"`{key}`")


def main(argv: list[str] | None = None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m sparkjobs.submit", description=__doc__.split("\n\n")[0])
    parser.add_argument("template")
    parser.add_argument("--args-json", default="{}")
    parser.add_argument("--master", default=None)
    parser.add_argument("--result-file", default=None)
    parser.add_argument("--print", action="store_true", help="print the command instead of running it")
    options = parser.parse_args(argv)
    try:
        args = json.loads(options.args_json)
        argv_, env = command(options.template, args, master=options.master, result_file=options.result_file)
    except (ValueError, JobError) as error:
        from sparkjobs.output import Reporter

        Reporter().finish(status="failed", template=options.template, error=str(error), error_type="submit")
        return 1 if isinstance(error, JobError) else 2
    if options.print:
        print(" ".join(argv_))
        return 0
    os.execvpe(argv_[0], argv_, env)  # noqa: S606 - becomes spark-submit, so signals reach it directly
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
