"""A real loopback TCP server that misbehaves the ways a broken or hostile probe server can.

Each connection is handled by ``behaviour(request, conn)``: ``request`` is the parsed
request (method, path, headers, body), ``conn`` the raw socket, so a behaviour may answer
normally, echo the Authorization header back, trickle bytes, go silent, stream a huge
body or reset the connection. Shared by the hostile-server tests.
"""

from __future__ import annotations

import contextlib
import json
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler


@dataclass
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes

    @property
    def auth(self) -> str:
        return self.headers.get("authorization", "")


Behaviour = Callable[[Request, socket.socket], None]


@dataclass
class HostileServer:
    behaviour: Behaviour
    requests: list[Request] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._sock = socket.create_server(("127.0.0.1", 0))
        self._sock.settimeout(0.2)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._sock.getsockname()[1]}"

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self._sock.accept()
            except TimeoutError:
                continue
            except OSError:
                return
            threading.Thread(target=self._handle, args=(conn,), daemon=True).start()

    def _handle(self, conn: socket.socket) -> None:
        conn.settimeout(10)
        buf = b""
        try:
            while not self._stop.is_set():
                while b"\r\n\r\n" not in buf:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                head, buf = buf.split(b"\r\n\r\n", 1)
                lines = head.decode("latin-1").split("\r\n")
                method, path, _ = lines[0].split(" ", 2)
                headers = {k.strip().lower(): v.strip() for k, v in (line.split(":", 1) for line in lines[1:] if ":" in line)}
                length = int(headers.get("content-length", "0"))
                while len(buf) < length:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    buf += chunk
                body, buf = buf[:length], buf[length:]
                request = Request(method, path, headers, body)
                self.requests.append(request)
                self.behaviour(request, conn)
        except (OSError, ValueError):
            return
        finally:
            with contextlib.suppress(OSError):
                conn.close()

    def close(self) -> None:
        self._stop.set()
        self._sock.close()

    def __enter__(self) -> HostileServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def send(conn: socket.socket, status: int, body: bytes | str, content_type: str = "application/json") -> None:
    """One whole HTTP/1.1 response with a Content-Length."""
    data = body.encode() if isinstance(body, str) else body
    head = f"HTTP/1.1 {status} X\r\nContent-Type: {content_type}\r\nContent-Length: {len(data)}\r\n\r\n"
    conn.sendall(head.encode() + data)


def send_json(conn: socket.socket, status: int, payload: object) -> None:
    send(conn, status, json.dumps(payload))


def reply_json(handler: BaseHTTPRequestHandler, status: int, payload: object) -> None:
    """Answer one request of an ``http.server`` stand-in with ``payload`` as a JSON body."""
    data = json.dumps(payload).encode()
    handler.send_response(status)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def send_stream(conn: socket.socket, lines: list[str]) -> None:
    """A chunked ``text/event-stream`` answer of ``lines`` (each already ``data: ...``)."""
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    for line in lines:
        data = (line + "\n\n").encode()
        conn.sendall(b"%x\r\n%s\r\n" % (len(data), data))
    conn.sendall(b"0\r\n\r\n")


def reset(conn: socket.socket) -> None:
    """Close with a TCP RST (SO_LINGER 0)."""
    conn.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    conn.close()


def hold(conn: socket.socket, seconds: float = 30.0) -> None:
    """Say nothing for ``seconds`` (a hung server), then close."""
    time.sleep(seconds)


def models_card(root: str | None = None) -> dict:
    """A ``/v1/models`` answer listing one probe model (``root``: its checkpoint folder, for config.json)."""
    card: dict[str, object] = {"id": "probe", "object": "model"}
    if root is not None:
        card["root"] = root
    return {"object": "list", "data": [card]}


def token_chunk(logprob: object = -0.5, token: str = "a") -> str:
    """A streamed completion chunk carrying one token and its top logprobs."""
    return "data: " + json.dumps({"choices": [{"text": token, "logprobs": {"top_logprobs": [{token: logprob}]}}]})
