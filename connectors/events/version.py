"""The Debezium release whose events every source writes byte for byte, and the `source.version` they stamp."""

DEBEZIUM_VERSION = "3.6.1.Final"
# source.version: the release the events match, as Debezium stamps its own
SOURCE_VERSION = DEBEZIUM_VERSION
