"""Snapshot coordination every source shares: the chunked, parallel, resumable initial snapshot (coordinator.py),
its progress in the offset record, chunk executors and chunk markers (docs/snapshots.md)."""
