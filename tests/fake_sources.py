"""Fake database servers that ask a client for its password in clear text, to see where the platform sends one.

`FakeSource.start(kind)` listens on a free loopback port (on every address of 127.0.0.0/8 when `any_loopback`) and
records each connection and every byte it receives. PostgreSQL's fake answers the startup message with
AuthenticationCleartextPassword; MySQL/MariaDB's greets with mysql_native_password and then switches the client to
mysql_clear_password; MongoDB's only listens (a SCRAM client never sends its password, so any connection at all
counts); `banner` is another service, which greets with SSH's banner and then answers anything with HTTP's 400.
`passwords` are the clear-text passwords received. The fakes' threads are named `fake-…`.
"""

from __future__ import annotations

import socket
import struct
import threading
from dataclasses import dataclass, field

BANNER = b"SSH-2.0-OpenSSH_9.2p1 Debian-2\r\n"


@dataclass
class FakeSource:
    kind: str
    server: socket.socket
    connections: int = 0
    received: bytearray = field(default_factory=bytearray)
    passwords: list[bytes] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    clients: list[socket.socket] = field(default_factory=list)

    @classmethod
    def start(cls, kind: str, any_loopback: bool = False) -> FakeSource:
        server = socket.socket()
        server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        server.bind(("" if any_loopback else "127.0.0.1", 0))
        server.listen(512)
        server.settimeout(0.1)
        fake = cls(kind, server)
        threading.Thread(target=fake.serve, daemon=True, name=f"fake-{kind}").start()
        return fake

    @property
    def port(self) -> int:
        return self.server.getsockname()[1]

    def close(self) -> None:
        self.stop.set()
        for client in self.clients:
            client.close()
        self.server.close()

    def serve(self) -> None:
        while not self.stop.is_set():
            try:
                client, _ = self.server.accept()
            except (TimeoutError, OSError):
                continue
            self.connections += 1
            self.clients.append(client)
            talk = {"postgres": self.talk_postgres, "mysql": self.talk_mysql, "banner": self.talk_banner}.get(
                self.kind, self.listen)
            threading.Thread(target=self.guarded, args=(talk, client), daemon=True,
                             name=f"fake-{self.kind}-client").start()

    def guarded(self, talk, client: socket.socket) -> None:
        client.settimeout(10)
        try:
            talk(client)
        except OSError:
            pass

    def read(self, client: socket.socket, size: int) -> bytes:
        data = b""
        while len(data) < size:
            chunk = client.recv(size - len(data))
            if not chunk:
                raise ConnectionError("closed")
            data += chunk
        self.received += data
        return data

    def listen(self, client: socket.socket) -> None:
        while not self.stop.is_set():
            chunk = client.recv(65536)
            if not chunk:
                return
            self.received += chunk

    def talk_banner(self, client: socket.socket) -> None:
        client.sendall(BANNER)
        self.received += client.recv(65536)
        client.sendall(b"HTTP/1.1 400 Bad Request\r\n\r\n")
        client.close()

    # -- PostgreSQL: SSLRequest -> 'N', StartupMessage -> AuthenticationCleartextPassword, PasswordMessage -------

    def talk_postgres(self, client: socket.socket) -> None:
        while True:
            length, code = struct.unpack("!ii", self.read(client, 8))
            self.read(client, length - 8)
            if code in (80877103, 80877104):  # SSLRequest, GSSENCRequest: not here
                client.sendall(b"N")
                continue
            break
        client.sendall(b"R" + struct.pack("!ii", 8, 3))
        kind = self.read(client, 1)
        (length,) = struct.unpack("!i", self.read(client, 4))
        body = self.read(client, length - 4)
        if kind == b"p":
            self.passwords.append(body.rstrip(b"\0"))
        message = b"SFATAL\0C28P01\0Mpassword authentication failed\0\0"
        client.sendall(b"E" + struct.pack("!i", len(message) + 4) + message)
        client.close()

    # -- MySQL/MariaDB: handshake v10, then an auth switch to mysql_clear_password --------------------------------

    def talk_mysql(self, client: socket.socket) -> None:
        capabilities = 0x1 | 0x8 | 0x200 | 0x8000 | 0x80000  # long password, with db, 4.1, secure conn, plugin auth
        scramble = b"abcdefghijklmnopqrst"
        greeting = (b"\x0a" + b"10.11.0-fake\0" + struct.pack("<I", 7) + scramble[:8] + b"\0"
                    + struct.pack("<H", capabilities & 0xFFFF) + b"\x21" + struct.pack("<H", 2)
                    + struct.pack("<H", capabilities >> 16) + bytes([21]) + b"\0" * 10 + scramble[8:] + b"\0"
                    + b"mysql_native_password\0")
        self.send_mysql(client, 0, greeting)
        self.read_mysql(client)  # the handshake response
        self.send_mysql(client, 2, b"\xfe" + b"mysql_clear_password\0")
        answer = self.read_mysql(client)
        self.passwords.append(answer.rstrip(b"\0"))
        self.send_mysql(client, 4, b"\xff" + struct.pack("<H", 1045) + b"#28000Access denied")
        client.close()

    @staticmethod
    def send_mysql(client: socket.socket, sequence: int, payload: bytes) -> None:
        client.sendall(struct.pack("<I", len(payload))[:3] + bytes([sequence]) + payload)

    def read_mysql(self, client: socket.socket) -> bytes:
        header = self.read(client, 4)
        return self.read(client, int.from_bytes(header[:3], "little"))
