"""A TCP relay to a local port that a test can freeze: while frozen it moves no byte either way and closes nothing,
as a network cut does (the peers' connections neither answer nor fail until TCP gives up); thawed, everything
queued goes through. Threads of the test's own process; `with FreezeProxy(5432) as proxy: proxy.port`."""
from __future__ import annotations

import socket
import threading
import time
from types import TracebackType


class FreezeProxy:
    def __init__(self, target_port: int, target_host: str = "127.0.0.1") -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port = self._listener.getsockname()[1]
        self._thawed = threading.Event()
        self._thawed.set()
        self._closed = threading.Event()
        self._sockets: list[socket.socket] = []
        threading.Thread(target=self._accept, daemon=True, name="freeze-proxy").start()

    def freeze(self) -> None:
        self._thawed.clear()

    def thaw(self) -> None:
        self._thawed.set()

    def _accept(self) -> None:
        while not self._closed.is_set():
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            try:
                upstream = socket.create_connection(self.target, timeout=5)
            except OSError:
                client.close()
                continue
            upstream.settimeout(None)
            self._sockets += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    def _pump(self, source: socket.socket, sink: socket.socket) -> None:
        try:
            while not self._closed.is_set():
                # A frozen relay reads nothing (the sender's data waits in the kernel), then goes on where it was.
                while not self._thawed.wait(timeout=0.2):
                    if self._closed.is_set():
                        return
                data = source.recv(65536)
                if not data:
                    break
                while not self._thawed.is_set() and not self._closed.is_set():
                    time.sleep(0.05)  # read just before the freeze: held back too
                sink.sendall(data)
        except OSError:
            pass
        finally:
            for sock in (source, sink):
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def close(self) -> None:
        self._closed.set()
        self._thawed.set()
        self._listener.close()
        for sock in self._sockets:
            try:
                sock.close()
            except OSError:
                pass

    def __enter__(self) -> FreezeProxy:
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()
