"""Settings of one emulated replica set."""

from __future__ import annotations

from dataclasses import dataclass

DEFAULT_OPLOG_MAX_BYTES = 256 * 1024 * 1024


@dataclass
class EmulatorConfig:
    members: int = 3
    port: int = 27017              # first member's port; 0 picks free consecutive ports
    host: str = "127.0.0.1"        # name members advertise in hello/hosts
    bind: str = "127.0.0.1"        # address the sockets listen on
    replset: str = "rs0"
    oplog_max_entries: int | None = None
    oplog_max_bytes: int | None = DEFAULT_OPLOG_MAX_BYTES
    election_timeout: float = 1.0          # seconds before a lost primary is replaced
    stepdown_election_delay: float = 0.1   # seconds between a step-down and the next primary
    noop_interval: float = 10.0            # periodic no-op writer (advances idle change streams)
    kill_cursors_on_stepdown: bool = True
    data_dir: str | None = None
    checkpoint_interval: float = 5.0       # seconds between persistence checkpoints when dirty
    standalone: bool = False               # one mongod without --replSet: no oplog, no change streams
    version: str = "7.0.14"
    max_wire_version: int = 21
