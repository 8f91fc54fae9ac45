"""Tiny servers an attacker would run: they speak just enough of the PostgreSQL or MySQL protocol to ask the
client for its password in clear text, and keep every byte the client sent.

Each listens on 127.0.0.1, on a port of the kernel's choosing, in a thread of the test; `received()` is everything
that reached it, so a test asserts that a stored password never did.
"""
from __future__ import annotations

import socket
import struct
import threading
from collections.abc import Iterator
from contextlib import contextmanager

_SSL_REQUEST = 80877103
_GSSENC_REQUEST = 80877104
_TIMEOUT_S = 10.0


class FakeServer:
    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.listener.settimeout(_TIMEOUT_S)
        self.port: int = self.listener.getsockname()[1]
        self.connections = 0
        self._received = bytearray()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    def received(self) -> bytes:
        with self._lock:
            return bytes(self._received)

    def start(self) -> FakeServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        # close() alone leaves the thread in accept() until its time-out (10 s a test); shutdown() wakes it (Linux).
        try:
            self.listener.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.listener.close()
        self._thread.join(timeout=_TIMEOUT_S)

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                sock, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            sock.settimeout(_TIMEOUT_S)
            try:
                self.converse(sock)
            except OSError:
                pass
            finally:
                sock.close()

    def _recv(self, sock: socket.socket, n: int) -> bytes:
        """Exactly n bytes (fewer if the client hung up), each kept."""
        data = b""
        while len(data) < n:
            chunk = sock.recv(n - len(data))
            if not chunk:
                break
            data += chunk
        with self._lock:
            self._received += data
        return data

    def converse(self, sock: socket.socket) -> None:
        raise NotImplementedError


class FakePostgres(FakeServer):
    """Declines TLS, reads the startup message, then asks for AuthenticationCleartextPassword (R, 3)."""

    def converse(self, sock: socket.socket) -> None:
        while True:
            head = self._recv(sock, 8)
            if len(head) < 8:
                return
            length, code = struct.unpack("!II", head)
            if code in (_SSL_REQUEST, _GSSENC_REQUEST) and length == 8:
                sock.sendall(b"N")
                continue
            self._recv(sock, length - 8)  # the rest of the startup message: user, database
            break
        sock.sendall(b"R" + struct.pack("!II", 8, 3))
        # A client that obeys sends a PasswordMessage ('p'); one that refuses hangs up.
        head = self._recv(sock, 5)
        if len(head) == 5:
            self._recv(sock, struct.unpack("!I", head[1:])[0] - 4)


def _mysql_packet(seq: int, payload: bytes) -> bytes:
    return struct.pack("<I", len(payload))[:3] + bytes([seq]) + payload


class FakeMysql(FakeServer):
    """Greets as MariaDB with mysql_native_password, then switches the client to mysql_clear_password."""

    greeting_plugin = b"mysql_native_password"

    def _read_packet(self, sock: socket.socket) -> tuple[int, bytes]:
        head = self._recv(sock, 4)
        if len(head) < 4:
            return -1, b""
        length = int.from_bytes(head[:3], "little")
        return head[3], self._recv(sock, length)

    def converse(self, sock: socket.socket) -> None:
        capabilities = (0x1 | 0x4 | 0x8 | 0x200 | 0x2000 | 0x8000 | 0x10000 | 0x20000 | 0x80000 | 0x200000)
        scramble = b"abcdefgh" + b"ijklmnopqrst"
        greeting = (
            b"\x0a" + b"5.5.5-10.11.0-MariaDB-fake\x00" + struct.pack("<I", 7) + scramble[:8] + b"\x00"
            + struct.pack("<H", capabilities & 0xFFFF) + b"\x21" + struct.pack("<H", 2)
            + struct.pack("<H", capabilities >> 16) + bytes([21]) + b"\x00" * 10
            + scramble[8:] + b"\x00" + self.greeting_plugin + b"\x00"
        )
        sock.sendall(_mysql_packet(0, greeting))
        seq, _response = self._read_packet(sock)
        if seq < 0:
            return
        sock.sendall(_mysql_packet(seq + 1, b"\xfe" + b"mysql_clear_password\x00"))
        seq, _password = self._read_packet(sock)
        if seq < 0:
            return
        sock.sendall(_mysql_packet(seq + 1, b"\x00\x00\x00\x02\x00\x00\x00"))
        self._read_packet(sock)


class FakeMysqlUnreadablePlugin(FakeMysql):
    """Greets asking for a clear-text plugin whose name is not UTF-8. libmariadb refuses it (CR_PLUGIN_NOT_ALLOWED)
    with a message quoting that name, which mysqlclient cannot decode: the item it leaves in the exception's
    args is NULL, as when the message quotes freed memory."""

    greeting_plugin = b"\xffmysql_clear_password"


@contextmanager
def fake_server(kind: type[FakeServer]) -> Iterator[FakeServer]:
    server = kind().start()
    try:
        yield server
    finally:
        server.stop()
