"""What every source shares to write Debezium events: the Kafka Connect schema model (`schema`), the logical types
Debezium and Kafka Connect name (`logical`), and Kafka Connect's JsonConverter encoding (`json_converter`).

Destined to become `connectors/events/` when the engine is made source-pluggable; it cannot take that name yet
because `connectors/events.py` (MongoDB's event builder) still holds it.
"""
