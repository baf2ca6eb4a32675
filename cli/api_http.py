"""One HTTP/1.1 exchange with the views' API over a plain loopback socket.

The CLI talks to one server it knows (``projections.http``, Python's ``http.server``): one
request, ``Connection: close``, a JSON answer. ``http.client`` would do it too, but importing it
loads the ``email`` parser and ``ssl`` (about 28 ms of the 100 ms a ``sluice submit`` takes,
issue 17), so this module speaks the few lines of the protocol the exchange needs: a
``Content-Length`` or chunked body, or one read to the end. Header values are checked for line
breaks, as ``http.client`` does, so a value cannot smuggle a second header.

The socket is ``_socket.socket``, the C type the ``socket`` module's class extends: importing
``socket`` builds its ``IntEnum`` classes from the constants (``AddressFamily``, ``SocketKind``…)
and loads ``selectors``, ~11.5 M instructions, 6 % of a ``sluice submit`` (issue 17), for
nothing the exchange uses. :func:`connect` does what ``socket.create_connection`` does.
"""

from __future__ import annotations

import _socket

from schemas.digits import ascii_whole

__all__ = ["MAX_ANSWER_BYTES", "ProtocolError", "connect", "exchange"]

MAX_ANSWER_BYTES = 256 << 20
"""An answer larger than this is refused (the API's largest, a full queue view, is far below)."""


class ProtocolError(ValueError):
    """The server's answer is not HTTP/1.x the client can read."""


def connect(host: str, port: int, timeout_s: float) -> _socket.socket:
    """A connected socket (``OSError`` when nothing answers: no byte of a request was sent).

    An ASCII host is given as bytes: ``getaddrinfo`` encodes a ``str`` one with the ``idna``
    codec, whose import (``encodings.idna``, ``stringprep``) was ~1 ms of a call."""
    try:
        name: str | bytes = host.encode("ascii")
    except UnicodeEncodeError:
        name = host
    error: OSError | None = None
    for family, kind, proto, _name, address in _socket.getaddrinfo(name, port, 0,
                                                                   _socket.SOCK_STREAM):
        sock = _socket.socket(family, kind, proto)
        try:
            sock.settimeout(timeout_s)
            sock.connect(address)
        except OSError as exc:  # the next address, as socket.create_connection does
            sock.close()
            error = exc
        else:
            return sock
    raise error or OSError("getaddrinfo returns an empty list")


def _request_bytes(method: str, host: str, path: str, headers: dict[str, str],
                   body: bytes | None) -> bytes:
    if not path.startswith("/") or any(c.isspace() or ord(c) < 0x20 for c in path):
        raise ValueError(f"invalid request path {path!r}")
    lines = [f"{method} {path} HTTP/1.1", f"Host: {host}", "Connection: close",
             "Accept-Encoding: identity"]
    if body is not None:
        lines.append(f"Content-Length: {len(body)}")
    for name, value in headers.items():
        if any(c in name for c in ":\r\n ") or "\r" in value or "\n" in value:
            raise ValueError(f"invalid header {name!r}: line breaks are not allowed")
        lines.append(f"{name}: {value}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + (body or b"")


def _read_all(sock: _socket.socket) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while chunk := sock.recv(65536):
        size += len(chunk)
        if size > MAX_ANSWER_BYTES:
            raise ProtocolError(f"the answer is larger than {MAX_ANSWER_BYTES} bytes")
        chunks.append(chunk)
    return b"".join(chunks)


def _dechunk(data: bytes) -> bytes:
    body, at = bytearray(), 0
    while True:
        end = data.find(b"\r\n", at)
        if end < 0:
            raise ProtocolError("truncated chunked body")
        try:
            size = int(data[at:end].split(b";", 1)[0], 16)
        except ValueError:
            raise ProtocolError(f"bad chunk size {data[at:end][:20]!r}") from None
        if size == 0:
            return bytes(body)
        start = end + 2
        if len(data) < start + size + 2:
            raise ProtocolError("truncated chunked body")
        body += data[start:start + size]
        at = start + size + 2


def parse_answer(data: bytes) -> tuple[int, bytes]:
    """(status, body) of a whole HTTP/1.x answer read to the end of the connection."""
    head, found, rest = data.partition(b"\r\n\r\n")
    if not found:
        raise ProtocolError(f"no complete answer ({len(data)} bytes)")
    status_line, *header_lines = head.decode("latin-1").split("\r\n")
    version, _, tail = status_line.partition(" ")
    code = tail[:3]
    if not version.startswith("HTTP/1.") or ascii_whole(code) is None:
        raise ProtocolError(f"not an HTTP/1.x status line: {status_line[:80]!r}")
    headers = {}
    for line in header_lines:
        name, colon, value = line.partition(":")
        if colon:
            headers[name.strip().lower()] = value.strip()
    if "chunked" in headers.get("transfer-encoding", "").lower():
        return int(code), _dechunk(rest)
    length_text = headers.get("content-length")
    if length_text is not None:
        length = ascii_whole(length_text)
        if length is None:
            raise ProtocolError(f"bad Content-Length {length_text[:20]!r}")
        if len(rest) < length:
            raise ProtocolError(f"truncated body: {len(rest)} of {length} bytes")
        return int(code), rest[:length]
    return int(code), rest


def exchange(sock: _socket.socket, method: str, host: str, path: str, headers: dict[str, str],
             body: bytes | None) -> tuple[int, bytes]:
    """Send one request on ``sock`` and read the whole answer: (status, body).

    ``OSError`` (a timeout included) when the connection fails, :class:`ProtocolError` when the
    answer cannot be read, ``ValueError`` for a path or header that cannot be sent."""
    try:
        sock.sendall(_request_bytes(method, host, path, headers, body))
        return parse_answer(_read_all(sock))
    finally:
        sock.close()
