"""A table's source chunks read in a thread of their own, ahead of their comparison (connectors/core/verify.py).

Verify reads the table while it reads the table's topic, and the next chunk while it compares one: the source's
reads mostly wait on the database, the topic's on Kafka and the decoding of its records. The thread plans the table
and reads its chunks in order, one at a time, with the view's own calls (no other thread uses the view meanwhile:
`covers` reads only the view's position); it holds at most `ahead` chunks read and not yet compared.
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from connectors.core.snapshot.chunks import Chunk, chunks_of


class ChunkReader:
    def __init__(self, view: Any, table: str, chunk_size: int, ahead: int = 1):
        self._read = queue.Queue(maxsize=max(1, ahead))
        self._closed = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(view, table, chunk_size),
                                        name=f"verify-read-{table}", daemon=True)
        self._thread.start()

    def _put(self, item: Any) -> bool:
        while not self._closed.is_set():
            try:
                self._read.put(item, timeout=0.1)
                return True
            except queue.Full:
                continue
        return False

    def _run(self, view: Any, table: str, chunk_size: int) -> None:
        try:
            chunks = chunks_of(table, view.plan(table, chunk_size).bounds, 0)
            if not self._put(chunks):
                return
            for chunk in chunks:
                if not self._put(view.read_rows(chunk)):
                    return
        except BaseException as error:  # raised again where the rows are taken
            self._put(error)

    def _take(self) -> Any:
        item = self._read.get()
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
        self._closed.set()
        self._thread.join()
