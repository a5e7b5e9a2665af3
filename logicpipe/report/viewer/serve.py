"""Serve the written page on 127.0.0.1 (for `logicpipe view --serve`): one file, nothing else."""

from __future__ import annotations

from functools import partial
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

from ...core.errors import UsageError


class _PageHandler(BaseHTTPRequestHandler):
    def __init__(self, *args, page: Path, **kwargs):
        self.page = page
        super().__init__(*args, **kwargs)

    def do_GET(self) -> None:  # noqa: N802 - the name http.server calls
        if self.path.split("?")[0] not in ("/", "/" + self.page.name):
            self.send_error(404)
            return
        body = self.page.read_bytes()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:  # the library never prints
        pass


def page_server(page: Path, port: int = 0) -> ThreadingHTTPServer:
    """A server for `page` on 127.0.0.1:port (0: a free port); the caller runs serve_forever()."""
    try:
        return ThreadingHTTPServer(("127.0.0.1", port), partial(_PageHandler, page=page))
    except OSError as exc:
        raise UsageError(f"cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}") from None


def url(server: ThreadingHTTPServer) -> str:
    return f"http://127.0.0.1:{server.server_address[1]}/"
