"""librdkafka's own log, routed through Python logging (logger `connectors.kafka.librdkafka`) instead of stderr.

A client that cannot reach its brokers logs the same failure every second per broker and per client; the
pipeline reports the outage itself ("Kafka not available at …", once, as its error), so repeats of one message
are dropped for a minute.
"""

from __future__ import annotations

import logging
import re
import threading
import time

LOGGER_NAME = "connectors.kafka.librdkafka"
REPEAT_WINDOW_SECONDS = 60.0
_VARYING = re.compile(r"\d+")  # counts, durations and client numbers change between repeats of one message


class RepeatFilter(logging.Filter):
    def __init__(self, window: float = REPEAT_WINDOW_SECONDS):
        super().__init__()
        self.window = window
        self._last_seen: dict[str, float] = {}
        self._lock = threading.Lock()

    def filter(self, record: logging.LogRecord) -> bool:
        text = _VARYING.sub("#", record.getMessage())
        now = time.monotonic()
        with self._lock:
            seen = self._last_seen.get(text)
            if seen is not None and now - seen < self.window:
                return False
            if len(self._last_seen) > 1000:
                self._last_seen.clear()
            self._last_seen[text] = now
        return True


client_logger = logging.getLogger(LOGGER_NAME)
client_logger.addFilter(RepeatFilter())


def with_client_logger(config: dict) -> dict:
    """A confluent-kafka client configuration whose log goes through `client_logger`."""
    return {**config, "logger": client_logger}
