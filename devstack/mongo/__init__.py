"""MongoDB 7.0 replica-set emulator: wire protocol, CRUD, oplog, change streams, elections and faults.

See docs/emulator.md. Python API: `start_replica_set(...)` -> `ReplicaSetHandle`, `start_standalone(...)`;
CLI: `python -m devstack.mongo`.
"""

from devstack.mongo.config import EmulatorConfig
from devstack.mongo.handle import ReplicaSetHandle, start_replica_set, start_replica_sets, start_standalone

__all__ = ["EmulatorConfig", "ReplicaSetHandle", "start_replica_set", "start_replica_sets", "start_standalone"]
