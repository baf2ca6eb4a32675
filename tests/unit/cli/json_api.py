"""A views API of a test's own: answers every GET with the JSON its ``answer`` makes of the
path (what the CLI's waits and listings read), on a loopback port."""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

__all__ = ["json_api"]


@contextlib.contextmanager
def json_api(answer: Callable[[str], dict[str, Any]]) -> Iterator[str]:
    """Serve ``answer(path)`` as JSON to every GET; yields the API's ``host:port``."""

    class Api(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = json.dumps(answer(self.path)).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            del args

    api = HTTPServer(("127.0.0.1", 0), Api)
    thread = threading.Thread(target=api.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"127.0.0.1:{api.server_address[1]}"
    finally:
        api.shutdown()
        api.server_close()
