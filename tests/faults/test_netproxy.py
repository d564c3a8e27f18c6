"""The campaign's TCP fault proxy (bench/faults/netproxy.py) on a local echo server: bytes pass, latency delays
them, a blackhole holds them until healed, a reset ends open connections with a RST."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from bench.faults.netproxy import FaultProxy


@pytest.fixture
def echo_port():
    server = socket.create_server(("127.0.0.1", 0))

    def serve():
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            threading.Thread(target=_echo, args=(conn,), daemon=True).start()

    threading.Thread(target=serve, daemon=True).start()
    yield server.getsockname()[1]
    server.close()


def _echo(conn: socket.socket) -> None:
    with conn:
        try:
            while data := conn.recv(4096):
                conn.sendall(data)
        except ConnectionResetError:
            pass  # the proxy's reset reaches this side too


def _round_trip(sock: socket.socket, payload: bytes = b"ping") -> float:
    started = time.monotonic()
    sock.sendall(payload)
    received = b""
    while len(received) < len(payload):
        chunk = sock.recv(4096)
        assert chunk, "the connection closed"
        received += chunk
    assert received == payload
    return time.monotonic() - started


def test_latency_blackhole_and_reset(echo_port):
    proxy = FaultProxy("127.0.0.1", echo_port).start()
    try:
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        assert _round_trip(sock) < 1.0
        proxy.latency(0.3)
        assert _round_trip(sock) >= 0.6  # 0.3 s each way
        proxy.heal()

        proxy.blackhole()
        sock.sendall(b"held")
        sock.settimeout(1.0)
        with pytest.raises(TimeoutError):
            sock.recv(4096)
        proxy.heal()
        sock.settimeout(10)
        assert sock.recv(4096) == b"held"  # held, not dropped: the stream is intact

        proxy.reset()
        with pytest.raises((ConnectionResetError, ConnectionAbortedError, BrokenPipeError)):
            for _ in range(50):  # the RST arrives within the pumps' 0.2 s poll
                _round_trip(sock)
                time.sleep(0.1)
        fresh = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        assert _round_trip(fresh) < 1.0  # new connections go through after a reset
    finally:
        proxy.close()


def test_refuse_resets_every_connection_until_healed(echo_port):
    """As a server that is down: open connections are reset, new ones are reset at once; after heal() they pass."""
    proxy = FaultProxy("127.0.0.1", echo_port).start()
    try:
        sock = socket.create_connection(("127.0.0.1", proxy.port), timeout=10)
        assert _round_trip(sock) < 1.0
        proxy.refuse()
        with pytest.raises((ConnectionResetError, ConnectionAbortedError, BrokenPipeError, AssertionError)):
            for _ in range(50):  # reset while connecting, or at the first bytes
                _round_trip(socket.create_connection(("127.0.0.1", proxy.port), timeout=10))
                time.sleep(0.1)
        proxy.heal()
        assert _passes_again(proxy.port)
    finally:
        proxy.close()


def _passes_again(port: int, seconds: float = 10.0) -> bool:
    """A new connection's round trip succeeds within `seconds` (one accepted while the refusal ended may be reset)."""
    deadline = time.monotonic() + seconds
    while True:
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=10) as fresh:
                _round_trip(fresh)
                return True
        except (ConnectionResetError, ConnectionAbortedError, BrokenPipeError, AssertionError):
            if time.monotonic() > deadline:
                return False
            time.sleep(0.1)
