"""A TCP proxy on loopback that loses a reply: the failure that makes a write's outcome unknown.

Between a client and a real server (PostgreSQL, Redis), it forwards bytes both ways. When a
client chunk contains ``marker`` and drops are left, it forwards the chunk, waits for the
server's reply (so the server did apply the request), throws the reply away and closes both
connections: the client sees its connection break after the server committed. ``down`` makes it
refuse every new connection (a network partition) until cleared.
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import threading
import time
from collections.abc import Iterator


class ReplyDroppingProxy:
    def __init__(self, upstream_port: int, marker: bytes) -> None:
        self.upstream = ("127.0.0.1", upstream_port)
        self.marker = marker
        self.drops_left = 0
        self.dropped = 0
        self.down = False
        self._listener = socket.socket()
        self._listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self._listener.bind(("127.0.0.1", 0))
        self._listener.listen(64)
        self.port = int(self._listener.getsockname()[1])
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._accept, daemon=True)
        self._thread.start()

    def drop_next(self, count: int = 1) -> None:
        with self._lock:
            self.drops_left = count

    def _accept(self) -> None:
        self._listener.settimeout(0.1)
        while not self._stop.is_set():
            try:
                client, _ = self._listener.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            if self.down:
                client.close()
                continue
            threading.Thread(target=self._pipe, args=(client,), daemon=True).start()

    def _take_drop(self, chunk: bytes) -> bool:
        with self._lock:
            if self.drops_left > 0 and self.marker in chunk:
                self.drops_left -= 1
                self.dropped += 1
                return True
        return False

    def _pipe(self, client: socket.socket) -> None:
        try:
            server = socket.create_connection(self.upstream, timeout=5)
        except OSError:
            client.close()
            return
        with client, server, selectors.DefaultSelector() as selector:
            # a selector, not select(): descriptors above 1024 are common in a long test run
            selector.register(client, selectors.EVENT_READ)
            selector.register(server, selectors.EVENT_READ)
            while not self._stop.is_set():
                for key, _ in selector.select(0.1):
                    sock = key.fileobj
                    assert isinstance(sock, socket.socket)
                    try:
                        chunk = sock.recv(65536)
                    except OSError:
                        return
                    if not chunk:
                        return
                    if sock is client:
                        drop = self._take_drop(chunk)
                        server.sendall(chunk)
                        if drop:
                            self._swallow_reply(server)
                            return  # both closed by the with: the reply never reaches the client
                    else:
                        client.sendall(chunk)

    @staticmethod
    def _swallow_reply(server: socket.socket) -> None:
        deadline = time.monotonic() + 5
        server.settimeout(0.2)
        got = False
        while time.monotonic() < deadline:
            try:
                data = server.recv(65536)
            except TimeoutError:
                if got:
                    return
                continue
            if not data:
                return
            got = True

    def close(self) -> None:
        self._stop.set()
        with contextlib.suppress(OSError):
            self._listener.close()
        self._thread.join(5)


@contextlib.contextmanager
def reply_dropping_proxy(upstream_port: int, marker: bytes) -> Iterator[ReplyDroppingProxy]:
    proxy = ReplyDroppingProxy(upstream_port, marker)
    try:
        yield proxy
    finally:
        proxy.close()
