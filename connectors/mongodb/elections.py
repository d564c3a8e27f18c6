"""Counting primary elections from what the driver observes (electionId and primary address), not guessing.

pymongo's SDAM monitoring reports every topology change; a new primary with an electionId different from the
last one we saw is an election. The first primary seen after start-up is not counted.
"""

from __future__ import annotations

from collections.abc import Callable

from pymongo import monitoring
from pymongo.server_type import SERVER_TYPE


class ElectionWatcher(monitoring.TopologyListener):
    def __init__(self, on_election: Callable[[str], None], on_members: Callable[[str | None, list[str]], None]):
        self._on_election = on_election
        self._on_members = on_members
        self._last: tuple[object, str] | None = None

    def opened(self, event):
        pass

    def closed(self, event):
        pass

    def description_changed(self, event: monitoring.TopologyDescriptionChangedEvent) -> None:
        description = event.new_description
        primary = None
        members: list[str] = []
        for address, server in description.server_descriptions().items():
            members.append(f"{address[0]}:{address[1]}")
            if server.server_type == SERVER_TYPE.RSPrimary:
                primary = (server.election_id, f"{address[0]}:{address[1]}")
        self._on_members(primary[1] if primary else None, sorted(members))
        if primary is None:
            return
        if self._last is not None and primary != self._last:
            previous_election_id = self._last[0]
            if primary[0] != previous_election_id or primary[1] != self._last[1]:
                self._on_election(primary[1])
        self._last = primary
