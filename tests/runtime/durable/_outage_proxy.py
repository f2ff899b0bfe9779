"""A TCP proxy to a database server that can go down and come back, as a restarted server."""

from __future__ import annotations

import contextlib
import socket
import threading

__all__ = ["OutageProxy"]


class OutageProxy:
    """Forwards 127.0.0.1:``port`` to ``target``; :meth:`cut` drops every connection and
    refuses new ones (they are closed at once) until :meth:`restore`."""

    def __init__(self, target_host: str, target_port: int) -> None:
        self.target = (target_host, target_port)
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.port: int = self._listener.getsockname()[1]
        self._lock = threading.Lock()
        self._down = False
        self._open: list[socket.socket] = []
        self._closed = False
        self._signals: socket.socket | None = None
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return  # closed
            with self._lock:
                down = self._down or self._closed
            if down:
                client.close()
                continue
            try:
                upstream = socket.create_connection(self.target)
            except OSError:
                client.close()
                continue
            with self._lock:
                self._open += [client, upstream]
            for source, sink in ((client, upstream), (upstream, client)):
                threading.Thread(target=self._pump, args=(source, sink), daemon=True).start()

    @staticmethod
    def _pump(source: socket.socket, sink: socket.socket) -> None:
        with contextlib.suppress(OSError):
            while data := source.recv(65536):
                sink.sendall(data)
        for end in (source, sink):
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)

    def cut(self) -> None:
        """The server goes down: open connections drop, new ones are closed at once."""
        with self._lock:
            self._down = True
            dropped, self._open = self._open, []
        for end in dropped:
            with contextlib.suppress(OSError):
                end.shutdown(socket.SHUT_RDWR)
            end.close()

    def cut_on_signal(self, outage_s: float) -> int:
        """A port of its own: each connection to it cuts the proxy for ``outage_s`` seconds
        (for a process that cannot call :meth:`cut`, e.g. a Flink worker). Returns the port."""
        signals = socket.create_server(("127.0.0.1", 0))

        def serve() -> None:
            while True:
                try:
                    conn, _ = signals.accept()
                except OSError:
                    return
                conn.close()
                self.cut()
                threading.Timer(outage_s, self.restore).start()

        threading.Thread(target=serve, daemon=True).start()
        self._signals = signals
        return signals.getsockname()[1]

    def restore(self) -> None:
        """The server is back."""
        with self._lock:
            self._down = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
        self.cut()
        self._listener.close()
        if self._signals is not None:
            self._signals.close()
