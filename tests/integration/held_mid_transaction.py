"""`python -m tests.integration.held_mid_transaction run CONFIG.json --bootstrap-servers …`: `python -m connectors
run`, except that the first batch committed with an open source transaction in its offset (the `transaction` state
of provide.transaction.metadata) is the last one: the committing thread then waits forever. A test waits for that
offset in the offsets topic and kill -9s the process, which is then certainly in the middle of a source transaction
(gated on the offset, not on timing)."""

from __future__ import annotations

import sys
import threading

from connectors.__main__ import main
from connectors.kafka import sink

_write_batch = sink.TransactionalSink.write_batch


def _write_then_hold(self, messages, offset=None, payload=None):
    _write_batch(self, messages, offset, payload)
    value = offset.to_value() if offset is not None else None
    if value and b'"transaction":{' in value:
        threading.Event().wait()


if __name__ == "__main__":
    sink.TransactionalSink.write_batch = _write_then_hold
    sys.exit(main())
