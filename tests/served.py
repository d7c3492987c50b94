"""What the test servers share: an HTTP server on 127.0.0.1 served from a thread of its own, started and
stopped with `with`."""

from __future__ import annotations

import threading
from http.server import ThreadingHTTPServer
from typing import Self


class Served:
    """A server whose `_httpd` is made by the subclass; `url` is where it listens."""

    _httpd: ThreadingHTTPServer
    _thread: threading.Thread | None = None
    _name = "test-server"

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, args=(0.05,), name=self._name, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        if self._thread:
            self._thread.join(5)

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *_: object) -> None:
        self.stop()
