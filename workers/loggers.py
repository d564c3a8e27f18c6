"""Cluster-wide log levels (`PUT /connect/admin/loggers/{name}?scope=cluster`): a Celery remote-control command
every worker runs when the web process broadcasts it, applying the level as the web process did."""

from __future__ import annotations

from celery.worker.control import control_command, inspect_command

from web.connectors.connect import loggers

COMMAND = "cdc_set_log_level"


@control_command(args=[("logger", str), ("level", str)], signature="<logger> <level>")
def cdc_set_log_level(state, logger: str, level: str) -> dict:
    try:
        changed = loggers.set_level(logger, loggers.parse_level(level))
    except loggers.UnknownLevel as error:
        return {"error": str(error)}
    return {"ok": changed}


@inspect_command()
def cdc_log_levels(state) -> dict:
    """The worker's loggers with a level of their own (`celery inspect cdc_log_levels`), as /admin/loggers lists."""
    return loggers.explicit()


def broadcast(app, logger: str, level: str) -> None:
    """Sends the change to every worker (no reply awaited: Connect answers 204 for a cluster-wide change)."""
    app.control.broadcast(COMMAND, arguments={"logger": logger, "level": level}, reply=False)
