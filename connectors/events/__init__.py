"""What every source shares to write Debezium events: the Kafka Connect schema model (`schema`), the logical types
Debezium and Kafka Connect name (`logical`), and Kafka Connect's JsonConverter encoding (`json_converter`).
MongoDB's event builder is `connectors/mongodb/events.py`.
"""
