"""Verify runs as Celery tasks (docs/verify.md): `workers.snapshot.verify` on the `snapshot` queue reads the source
and the topics and stores the report on its VerifyRun; `workers.verify.start_nightly` (beat) starts scheduled runs."""

from __future__ import annotations

import logging
import time

from django.conf import settings
from django.db import close_old_connections
from django.utils import timezone

from cdcplatform.celery import app
from connectors import ConnectorError
from connectors.config.types import ConfigError
from connectors.core.verify import VerifyOptions
from connectors.sources import verify_connector
from web.connectors import definitions
from web.connectors.verify_models import VerifyRun, VerifyStatus
from web.connectors.verify_service import start_nightly as start_due

log = logging.getLogger(__name__)
PROGRESS_SECONDS = 1.0


def _finish(run_id: int, **fields) -> None:
    VerifyRun.objects.filter(pk=run_id).update(finished_at=timezone.now(), **fields)


@app.task(name="workers.snapshot.verify", bind=True)
def verify(self, run_id: int) -> dict:
    run = VerifyRun.objects.select_related("connector").filter(pk=run_id).first()
    if run is None:
        return {"run": run_id, "status": "gone"}
    VerifyRun.objects.filter(pk=run_id).update(status=VerifyStatus.RUNNING, started_at=timezone.now(),
                                               progress={"at": time.time()})
    last = [0.0]

    def progress(step: dict) -> None:
        now = time.time()
        if now - last[0] >= PROGRESS_SECONDS:
            last[0] = now
            VerifyRun.objects.filter(pk=run_id).update(progress={**step, "at": now})

    try:
        config = definitions.engine_config(run.connector)
        options = VerifyOptions(chunk_size=config.snapshot_chunk_size, chunk_max_bytes=config.snapshot_chunk_max_bytes,
                                wait_seconds=getattr(settings, "CDC_VERIFY_WAIT_SECONDS", 120.0))
        report = verify_connector(config, settings.KAFKA_BOOTSTRAP_SERVERS, options, on_progress=progress)
    except ConfigError as error:
        _finish(run_id, status=VerifyStatus.FAILED, error=f"The connector's configuration is invalid: {error}")
        return {"run": run_id, "status": "failed"}
    except ConnectorError as error:
        _finish(run_id, status=VerifyStatus.FAILED, error=str(error))
        return {"run": run_id, "status": "failed"}
    except Exception as error:  # noqa: BLE001 - stored as a sentence; the trace goes to the worker's log
        log.exception("verify run %s of %s failed", run_id, run.connector.name)
        _finish(run_id, status=VerifyStatus.FAILED,
                error=f"Verify stopped on an unexpected error ({type(error).__name__}: {error}).")
        return {"run": run_id, "status": "failed"}
    finally:
        close_old_connections()
    body = report.to_json()
    _finish(run_id, status=VerifyStatus.DONE, report=body, rows=report.rows, mismatched=report.mismatched,
            progress={"at": time.time(), "done": True})
    log.info("verify run %s: %s", run_id, report.summary())
    return {"run": run_id, "status": "done", "mismatched": report.mismatched}


@app.task(name="workers.verify.start_nightly")
def start_nightly() -> list[int]:
    return [run.pk for run in start_due()]
