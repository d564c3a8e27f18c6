"""A table's source chunks read in a thread of their own, ahead of their comparison (connectors/core/verify.py).

Verify reads the table while it reads the table's topic, and the next chunks while it compares one: the source's
reads mostly wait on the database, the topic's on Kafka and the decoding of its records. The thread plans the table
and reads its chunks in order, one at a time, with the view's own calls (no other thread uses the view meanwhile:
`covers` reads only the view's position). It reads a chunk only while the rows read and not yet compared hold fewer
than `budget` characters (keys and row states): memory stays bounded however large the table.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Any

from connectors.core.snapshot.chunks import Chunk, chunks_of


class ChunkReader:
    def __init__(self, view: Any, table: str, chunk_size: int, budget: int):
        self._budget = budget
        self._changed = threading.Condition()
        self._read: deque[tuple[Any, int]] = deque()  # (item, its characters): the chunks, rows, or an exception
        self._held = 0
        self._closed = False
        self._thread = threading.Thread(target=self._run, args=(view, table, chunk_size),
                                        name=f"verify-read-{table}", daemon=True)
        self._thread.start()

    def _room(self) -> bool:
        """Waits until the rows held leave room for another chunk; False once closed."""
        with self._changed:
            while not self._closed and self._held >= self._budget:
                self._changed.wait()
            return not self._closed

    def _put(self, item: Any, size: int = 0) -> None:
        with self._changed:
            self._read.append((item, size))
            self._held += size
            self._changed.notify_all()

    def _run(self, view: Any, table: str, chunk_size: int) -> None:
        try:
            chunks = chunks_of(table, view.plan(table, chunk_size).bounds, 0)
            self._put(chunks)
            for chunk in chunks:
                if not self._room():
                    return
                rows = view.read_rows(chunk)
                self._put(rows, sum(len(key or "") + len(state or "") for key, state in rows))
        except BaseException as error:  # raised again where the rows are taken
            self._put(error)

    def _take(self) -> Any:
        with self._changed:
            while not self._read:
                self._changed.wait()
            item, size = self._read.popleft()
            self._held -= size
            self._changed.notify_all()
        if isinstance(item, BaseException):
            raise item
        return item

    def chunks(self) -> list[Chunk]:
        """The table's chunks, as planned (first call only)."""
        return self._take()

    def rows(self) -> list:
        """The next chunk's rows (view.read_rows), in the order of `chunks`."""
        return self._take()

    def close(self) -> None:
        """Stops reading (after the read under way) and waits for the thread: the view may be closed then."""
        with self._changed:
            self._closed = True
            self._changed.notify_all()
        self._thread.join()
