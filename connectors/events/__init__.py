"""What every source shares to write Debezium events: the Kafka Connect schema model (`schema`), the logical types
Debezium and Kafka Connect name (`logical`), Kafka Connect's JsonConverter encoding (`json_converter`), and the
transaction metadata records of the sources that use it (`transaction_metadata`).
MongoDB's event builder is `connectors/mongodb/events.py`.
"""
