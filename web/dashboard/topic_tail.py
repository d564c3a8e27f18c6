"""`/ws/topics/<topic>/?partition=…&q=…&in=…`: the topic browser's live tail. Needs the viewer role.

`resume=<partition>:<offset>` (repeated) starts those partitions at that offset instead of the log end: the page
reconnects a tail that was cut off from the offsets after the last messages it showed, so nothing is missed.

Sends JSON objects with a `type`: `ready` once the tail follows the topic (`{positions: {partition: offset}}`: every
message committed from these offsets on is sent), then `message` for each matching committed message (the fields of
topic_browser.message_json), `skipped` when more than 50 a second matched (`{count}`), and `error` (`{message, retry}`)
before closing for a bad parameter, an unknown topic or Kafka failing (`retry` true: the page may reconnect).
"""

from __future__ import annotations

import asyncio
import threading
from urllib.parse import parse_qs

from channels.db import database_sync_to_async
from channels.generic.websocket import AsyncJsonWebsocketConsumer

from web.dashboard import message_filter
from web.dashboard import topic_browser as kafka
from web.dashboard.consumers import FORBIDDEN, UNAUTHENTICATED

BAD_REQUEST = 4400  # close code after an `error` message


def tail_query(query_string: str) -> kafka.Query:
    """The tail's filters (ValueError naming a bad one)."""
    params = parse_qs(query_string, keep_blank_values=True)
    query = kafka.Query(start="newest")
    chosen = [value for value in params.get("partition", []) if value.strip() and value.strip() != "all"]
    if chosen:
        try:
            query.partitions = sorted({int(value) for value in chosen})
        except ValueError:
            raise ValueError("partition must be a partition number or all") from None
    text = (params.get("q") or [""])[0]
    if len(text) > 200:
        raise ValueError("q: search for at most 200 characters")
    scopes = [scope for scope in params.get("in", []) if scope]
    bad = [scope for scope in scopes if scope not in kafka.SCOPES]
    if bad:
        raise ValueError(f"in={bad[0]} is not known; search in key, value and/or headers")
    query.text, query.scopes = text.strip(), tuple(scopes) or kafka.SCOPES
    expression = (params.get("f") or [""])[0].strip()
    if expression:
        try:
            query.filter = message_filter.parse(expression)
        except message_filter.FilterError as error:
            raise ValueError(f"f: {error}") from None
    resume = [value for value in params.get("resume", []) if value.strip()]
    if resume:
        try:
            query.resume = {int(p): int(o) for p, o in (value.split(":", 1) for value in resume)}
        except ValueError:
            raise ValueError("resume must be <partition>:<offset>") from None
    return query


class TopicTailConsumer(AsyncJsonWebsocketConsumer):
    stop: threading.Event | None = None
    worker: threading.Thread | None = None  # its own thread: a tail runs as long as the page is open

    async def connect(self):
        from web.dashboard.feed import can_view

        user = self.scope.get("user")
        if user is None or not user.is_authenticated:
            await self.close(code=UNAUTHENTICATED)
            return
        if not await database_sync_to_async(can_view)(user):
            await self.close(code=FORBIDDEN)
            return
        await self.accept()
        topic = self.scope["url_route"]["kwargs"]["topic"]
        try:
            query = tail_query(self.scope.get("query_string", b"").decode())
        except ValueError as error:
            await self._refuse(str(error))
            return
        loop = asyncio.get_running_loop()
        self.stop = threading.Event()

        def send(payload: dict) -> None:
            asyncio.run_coroutine_threadsafe(self.send_json(payload), loop)

        tail = kafka.Tail(topic, query, self.stop,
                          on_ready=lambda positions: send({"type": "ready", "positions": positions}),
                          on_message=lambda message: send({"type": "message", **kafka.message_json(message)}),
                          on_skipped=lambda count: send({"type": "skipped", "count": count}))
        self.worker = threading.Thread(target=self._run, args=(tail, topic, loop), name=f"tail {topic}", daemon=True)
        self.worker.start()

    def _run(self, tail: kafka.Tail, topic: str, loop) -> None:
        try:
            tail.run()
        except kafka.UnknownTopic:
            problem = f"There is no topic {topic} in the Kafka cluster."
        except kafka.KafkaUnavailable as error:
            asyncio.run_coroutine_threadsafe(self._refuse(f"Kafka did not answer: {error}", retry=True), loop)
            return
        else:
            return
        asyncio.run_coroutine_threadsafe(self._refuse(problem), loop)

    async def _refuse(self, message: str, retry: bool = False) -> None:
        await self.send_json({"type": "error", "message": message, "retry": retry})
        await self.close(code=BAD_REQUEST)

    async def disconnect(self, code):
        if self.stop is not None:
            self.stop.set()
        if self.worker is not None:
            await asyncio.to_thread(self.worker.join, 5)  # it notices `stop` within one poll (0.5 s)
