"""PostgreSQL source: pgoutput decoding (`pgoutput`), the replication reader (`replication`), the type mapping to
Kafka Connect schemas and Debezium values (`types`). No Django, no pymongo/bson."""
