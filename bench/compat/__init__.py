"""bench.compat: our events beside the real Debezium's, byte for byte (`python -m bench.compat --source …`).

Modules: `debezium` (fetch and run Debezium on a Kafka Connect standalone worker), `dump` (read topics
read_committed), `compare` (pair, mask, categorise), `run` (one comparison and its report), and one module per
source with its workload, connector properties and masks (`postgres`, …).
"""
