"""A change stream read a whole batch at a time, with the aggregate and getMore commands run through pymongo.

pymongo's ChangeStream hands out one event per ``try_next()`` (about 3 µs of Python each) and asks for the next batch
only once the last event of the current one is handed out, so the server builds nothing while the reader works
through a batch. Here the reader gets each reply's events as one list, queues them at once and asks for the next
batch straight away: the server builds it while the pipeline turns the last one into Kafka messages.

The commands are the ones ChangeStream sends (the change streams specification): ``aggregate`` with a
``$changeStream`` stage, ``getMore`` with ``maxTimeMS`` as the await time, ``killCursors`` on close, all in one
explicit session (a cursor opened in a session is read in that session). They are read from the primary, where the
aggregate ran; a getMore that reaches another server after an election fails and the reader resumes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import bson
import pymongo
from bson.int64 import Int64
from bson.raw_bson import RawBSONDocument
from pymongo.errors import PyMongoError

from connectors.config.types import CaptureScope
from connectors.mongodb.filters import WatchTarget
from connectors.mongodb.rawjson import DECODE_OPTIONS, RAW_OPTIONS, RawChangeEvent, reply_events


@dataclass(frozen=True, slots=True)
class ChangeBatch:
    events: list  # RawChangeEvent when read raw, else dicts decoded as the client decodes
    resume_token: Any  # the reply's postBatchResumeToken, decoded (None when the server sends none)
    ended: bool  # the server closed the cursor (after an invalidate): no further batch comes


class ChangeCursor:
    """One change stream cursor: `open` runs the aggregate and returns its first batch, `next_batch` a getMore's,
    `close` kills the cursor and ends the session.

    ``stage`` is the ``$changeStream`` stage's options (resumeAfter, fullDocument, …); ``raw``: the events are
    `rawjson.RawChangeEvent` (their full documents never decoded), else decoded with the client's codec options.
    """

    def __init__(self, client: pymongo.MongoClient, target: WatchTarget, stage: dict[str, Any], pipeline: list[dict],
                 batch_size: int, max_await_ms: int, raw: bool):
        if target.scope is CaptureScope.DEPLOYMENT:
            self._database, self._aggregate = client.admin, 1
            stage = {**stage, "allChangesForCluster": True}
        elif target.scope is CaptureScope.DATABASE:
            self._database, self._aggregate = client[target.database], 1
        else:
            self._database, self._aggregate = client[target.database], target.collection
        self._client = client
        self._pipeline = [{"$changeStream": stage}, *pipeline]
        self._batch_size = batch_size
        self._max_await_ms = max_await_ms
        self._raw = raw
        self._reply_options = RAW_OPTIONS if raw else client.codec_options
        self._read_concern = self._database.read_concern.document
        self._session = None
        self._cursor_id = 0
        self._collection = ""  # the cursor's namespace without its database: what getMore names

    def __enter__(self) -> ChangeCursor:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def open(self) -> ChangeBatch:
        self._session = self._client.start_session(causal_consistency=False)
        extra = {"readConcern": self._read_concern} if self._read_concern else {}
        reply = self._database.command("aggregate", self._aggregate, pipeline=self._pipeline,
                                       cursor={"batchSize": self._batch_size}, session=self._session,
                                       codec_options=self._reply_options, **extra)
        return self._batch(reply, "firstBatch")

    def next_batch(self) -> ChangeBatch:
        reply = self._database.command("getMore", Int64(self._cursor_id), collection=self._collection,
                                       batchSize=self._batch_size, maxTimeMS=self._max_await_ms,
                                       session=self._session, codec_options=self._reply_options)
        return self._batch(reply, "nextBatch")

    def close(self) -> None:
        session, self._session = self._session, None
        if session is None:
            return
        try:
            if self._cursor_id:
                self._database.command("killCursors", self._collection, cursors=[Int64(self._cursor_id)],
                                       session=session)
        except PyMongoError:
            pass  # the server drops an abandoned cursor on its own; a failed stream is reopened anyway
        finally:
            self._cursor_id = 0
            session.end_session()

    def _batch(self, reply, key: str) -> ChangeBatch:
        split = reply_events(reply) if self._raw else None
        if split is not None:
            events, cursor = split
        else:
            cursor = reply["cursor"]
            events = cursor[key]
            if self._raw:  # a reply the compiled module does not read: its events as RawBSONDocument
                events = [RawChangeEvent.of(event.raw) for event in events]
        self._cursor_id = cursor["id"]
        if not self._collection:
            self._collection = cursor["ns"].split(".", 1)[1]
        token = cursor.get("postBatchResumeToken")
        if isinstance(token, RawBSONDocument):
            token = bson.decode(token.raw, DECODE_OPTIONS)
        return ChangeBatch(events, token, not self._cursor_id)
