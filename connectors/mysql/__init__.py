"""MySQL/MariaDB source: binlog reading (GTID or file/pos), consistent snapshot position, source checks and
Debezium's MySQL type mapping. No Django, no MongoDB types."""
