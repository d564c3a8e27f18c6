"""A small TCP fault proxy (in the campaign's process) between the pipeline and a server: latency, a blackhole and
a reset, as toxiproxy's latency, timeout and reset_peer toxics do.

    proxy = FaultProxy("127.0.0.1", upstream_port, listen_port).start()
    proxy.latency(0.3)          # each chunk of bytes waits 0.3 s before it is passed on, both ways
    proxy.blackhole()           # bytes are held, nothing passes, new connections are accepted and hang
    proxy.reset()               # every open connection is closed with a RST (SO_LINGER 0), both sides
    proxy.refuse()              # a reset, and every new connection reset at once: as a server that is down
    proxy.sever()               # every open connection cut without a word to the client (a half-open connection)
    proxy.heal()                # no latency, no blackhole, connections accepted
"""

from __future__ import annotations

import socket
import struct
import threading
import time

CHUNK = 65536


class FaultProxy:
    def __init__(self, upstream_host: str, upstream_port: int, listen_port: int = 0):
        self.upstream = (upstream_host, upstream_port)
        self.listener = socket.create_server(("127.0.0.1", listen_port), reuse_port=False)
        self.port = self.listener.getsockname()[1]
        self.delay = 0.0
        self.flowing = threading.Event()
        self.flowing.set()
        self.refusing = False
        self.closed = False
        self._pairs: list[tuple[socket.socket, socket.socket]] = []
        self._severed: set[socket.socket] = set()  # clients' sockets held open and silent (sever)
        self._lock = threading.Lock()

    def start(self) -> FaultProxy:
        threading.Thread(target=self._accept, daemon=True, name=f"proxy-{self.port}").start()
        return self

    # the faults
    def latency(self, seconds: float) -> None:
        self.delay = seconds

    def blackhole(self) -> None:
        self.flowing.clear()

    def refuse(self) -> None:
        self.refusing = True
        self.reset()

    def heal(self) -> None:
        self.delay = 0.0
        self.refusing = False
        self.flowing.set()

    def reset(self) -> None:
        with self._lock:
            pairs, self._pairs = self._pairs, []
        for pair in pairs:
            for sock in pair:
                _abort(sock)

    def sever(self) -> None:
        """As a middlebox that lost the connections' state, or a peer gone without a word: each server's side is
        closed, each client's side held open and never written to again (the client sees silence, not a reset)."""
        with self._lock:
            pairs, self._pairs = self._pairs, []
            self._severed.update(client for client, _ in pairs)
        for _, server in pairs:
            _abort(server)

    def close(self) -> None:
        self.closed = True
        self.heal()
        self.listener.close()
        self.reset()
        with self._lock:
            severed, self._severed = self._severed, set()
        for sock in severed:
            _abort(sock)

    # the plumbing
    def _accept(self) -> None:
        while not self.closed:
            try:
                client, _ = self.listener.accept()
            except OSError:
                return
            if self.refusing:
                _abort(client)
                continue
            try:
                server = socket.create_connection(self.upstream, timeout=10)
            except OSError:
                _abort(client)
                continue
            for sock in (client, server):
                sock.settimeout(0.2)  # so that a reset's close takes effect within 0.2 s (a recv holds the socket)
            with self._lock:
                self._pairs.append((client, server))
            for source, target in ((client, server), (server, client)):
                threading.Thread(target=self._pump, args=(source, target), daemon=True).start()

    def _pump(self, source: socket.socket, target: socket.socket) -> None:
        try:
            while not self.closed:
                if source in self._severed or target in self._severed:
                    return
                try:
                    data = source.recv(CHUNK)
                except TimeoutError:
                    continue
                if not data:
                    target.shutdown(socket.SHUT_WR)
                    return
                self.flowing.wait()
                if self.delay:
                    time.sleep(self.delay)
                self.flowing.wait()
                self._send_all(target, data)
        except OSError:
            if source in self._severed or target in self._severed:
                return
            _abort(source)
            _abort(target)

    def _send_all(self, target: socket.socket, data: bytes) -> None:
        """sendall, keeping the socket's 0.2 s timeout: the other direction's pump receives on this same socket, and
        a blocking mode set here for it would leave that receive blocked past a reset (which then never reaches the
        client: the socket stays open under the blocked call)."""
        view = memoryview(data)
        while view:
            try:
                view = view[target.send(view):]
            except TimeoutError:
                if self.closed:
                    return


def _abort(sock: socket.socket) -> None:
    """Closes with a RST rather than a FIN, as a middlebox or a crashed peer does."""
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    except OSError:
        pass  # already closed
    try:
        sock.close()
    except OSError:
        pass
