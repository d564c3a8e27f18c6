"""The source-independent engine: one pipeline per partition of a source, each batch of events committed to Kafka
in one transaction with the partition's offset; snapshots chunked, parallel and resumable. A source (MongoDB,
PostgreSQL, MySQL/MariaDB) plugs in through the types of `connectors.core.source` (docs/architecture.md)."""
