"""The audit log: one entry per change, with masked before/after snapshots."""

from __future__ import annotations

import logging
from typing import Any

from web.connectors.models import AuditEntry

log = logging.getLogger("cdc.audit")

SOURCES = ("api", "connect", "admin", "dashboard", "cli", "system")


def record(user, source: str, action: str, target: str, before: Any = None, after: Any = None) -> AuditEntry:
    """Writes an audit entry. `before`/`after` must already be masked (definitions.describe)."""
    if source not in SOURCES:
        raise ValueError(f"unknown audit source {source!r}")
    authenticated = user is not None and getattr(user, "is_authenticated", False)
    entry = AuditEntry.objects.create(
        user=user if authenticated else None,
        username=user.get_username() if authenticated else "",
        source=source,
        action=action,
        target=target,
        before=before,
        after=after,
    )
    log.info("%s %s %s by %s", source, action, target, entry.username or "-")
    return entry
