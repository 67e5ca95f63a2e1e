"""The ``vllm`` executor against hostile and broken servers (real loopback sockets).

Every case must come back as an error result (never an exception, never a latency) within
twice the configured deadline, naming what was wrong, with the API key nowhere in it --
even from servers that echo the Authorization header back, whole, escaped, re-spaced,
truncated or as a logprob. Memory stays bounded on a 1 GiB body (measured in a child
process, see ``test_a_huge_body_keeps_memory_bounded``).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from faultsense_pipelines.probe.executors.vllm_http import VllmExecutor
from faultsense_pipelines.redaction import SecretError, forget_secrets
from tests.hostile_server import HostileServer, hold, models_card, reset, send, send_json, send_stream, token_chunk

pytestmark = pytest.mark.integration  # loopback HTTP servers and child processes

KEY = "sk-hostile-7f3a9c1e5b2d4f60a8e1"
ENV = "FS_HOSTILE_KEY"
DEADLINE = 1.0


def leaked(text: str, key: str = KEY) -> list[str]:
    """Every 8-character window of ``key`` found in ``text`` (a truncated echo leaks one)."""
    core = "".join(key.split())
    return sorted({core[i : i + 8] for i in range(len(core) - 7) if core[i : i + 8] in text})


def _serve_models_then(completions):
    def behaviour(request, conn):
        if request.path == "/v1/models":
            send_json(conn, 200, models_card())
        else:
            completions(request, conn)

    return behaviour


def _echo_500(shape):
    def behaviour(request, conn):
        send_json(conn, 500, {"error": {"message": shape(request.auth)}})

    return behaviour


def _trickle(request, conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    for _ in range(600):  # keep-alive comments, one every 50 ms, never a token
        conn.sendall(b"3\r\n:\n\n\r\n")
        time.sleep(0.05)


def _trickle_headers(request, conn):
    for byte in b"HTTP/1.1 200 OK\r\nX-Slow: " + b"a" * 600:
        conn.sendall(bytes([byte]))
        time.sleep(0.05)


def _huge_line(request, conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
    block = b"x" * 65536
    for _ in range(64):
        conn.sendall(b"%x\r\n%s\r\n" % (len(block), block))


def _huge_declared(request, conn):
    conn.sendall(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1073741824\r\n\r\n")
    conn.sendall(b"[" * 65536)


# (case id, behaviour, substring the error must hold)
CASES = [
    ("echo-whole", _echo_500(lambda auth: f"bad key {auth}"), "HTTP 500"),
    ("echo-repr", _echo_500(lambda auth: f"bad header {auth!r} {json.dumps(auth)}"), "HTTP 500"),
    ("echo-long-cut-at-300", _echo_500(lambda auth: "x" * 280 + auth + "y" * 50), "HTTP 500"),
    ("echo-respaced", _echo_500(lambda auth: auth[:12] + "\n\t  " + auth[12:20] + "\\n" + auth[20:]), "HTTP 500"),
    ("echo-truncated", _echo_500(lambda auth: "auth " + auth[:-6] + "..."), "HTTP 500"),
    ("echo-as-logprob", _serve_models_then(lambda r, c: send_stream(c, [token_chunk(r.auth)])), "logprob of token"),
    ("echo-as-token", _serve_models_then(lambda r, c: send_stream(c, [token_chunk("x", token=r.auth)])), "logprob of token"),
    ("models-not-json-200", lambda r, c: send(c, 200, "<html>ok</html>", "text/html"), "is not JSON"),
    ("models-json-list", lambda r, c: send_json(c, 200, [1, 2]), "is a list, expected an object"),
    ("models-json-string", lambda r, c: send_json(c, 200, "models"), "is a string, expected an object"),
    ("models-data-int", lambda r, c: send_json(c, 200, {"data": 5}), "'data' is a number, expected a list"),
    ("models-card-list", lambda r, c: send_json(c, 200, {"data": [[1]]}), "'data[0]' is a list, expected an object"),
    ("stream-not-json", _serve_models_then(lambda r, c: send_stream(c, ["data: {nope"])), "is not JSON"),
    ("stream-choices-int", _serve_models_then(lambda r, c: send_stream(c, ['data: {"choices": 3}'])), "'choices' is a number"),
    (
        "stream-choice-int",
        _serve_models_then(lambda r, c: send_stream(c, ['data: {"choices": [3]}'])),
        "'choices[0]' is a number",
    ),
    (
        "stream-logprobs-list",
        _serve_models_then(lambda r, c: send_stream(c, ['data: {"choices": [{"logprobs": []}]}'])),
        "logprobs",
    ),
    ("stream-nested-deep", _serve_models_then(lambda r, c: send_stream(c, ["data: " + "[" * 100000])), "nests too deeply"),
    ("http-500", lambda r, c: send_json(c, 500, {"error": "engine down"}), "HTTP 500"),
    ("reset", lambda r, c: reset(c), "failed"),
    ("silent", lambda r, c: hold(c), "deadline"),
    ("trickle-body", _serve_models_then(_trickle), "deadline"),
    ("trickle-headers", _trickle_headers, "deadline"),
    ("huge-line", _serve_models_then(_huge_line), "-byte cap"),
    ("huge-declared-body", _huge_declared, "-byte cap"),
]


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv(ENV, KEY)
    yield
    forget_secrets()


@pytest.mark.parametrize(("behaviour", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_every_hostile_server_is_one_error_row_without_the_key(behaviour, expected):
    with HostileServer(behaviour) as server:
        ex = VllmExecutor(4, 2, url=server.url, api_key_env=ENV, hidden=64, n_experts=4, tokens=4, timeout_s=DEADLINE, retries=0,
                          max_body_bytes=1 << 20, max_line_bytes=256 << 10)  # fmt: skip
        result = ex.run([0, 1])
        ex.close()
    # no clock here: a server that holds the request past the deadline would block run() for
    # good without it (pytest-timeout ends such a test); the error row names what ended it
    assert not result.ok and result.latencies_ms == ()
    assert expected in result.error, result.error
    assert leaked(result.error) == [], result.error
    assert all(r.auth == f"Bearer {KEY}" for r in server.requests)  # the key was sent (and echoed)


def test_a_hung_server_opens_the_circuit_breaker_after_a_few_deadlines():
    with HostileServer(lambda r, c: hold(c)) as server:
        ex = VllmExecutor(8, 4, url=server.url, api_key_env=ENV, hidden=64, n_experts=8, timeout_s=0.5, retries=2, backoff_s=0.01)
        results = [ex.run([i % 8, (i + 1) % 8, (i + 2) % 8, (i + 3) % 8]) for i in range(72)]
        ex.close()
    assert not any(r.ok for r in results)
    assert len(server.requests) == 3  # breaker_after=3: the 3 attempts of the first probe, then no request
    assert all("circuit open after 3 consecutive failed requests" in r.error for r in results[1:])


def test_a_success_resets_the_breaker_count():
    state = {"n": 0}

    def flaky(request, conn):
        state["n"] += 1
        if request.path == "/v1/models":
            send_json(conn, 200, models_card())
        elif state["n"] % 3 == 0:
            send_json(conn, 500, {"error": "hiccup"})
        else:
            send_stream(conn, [token_chunk(-0.25)])

    with HostileServer(flaky) as server:
        ex = VllmExecutor(4, 2, url=server.url, hidden=64, n_experts=4, tokens=4, timeout_s=DEADLINE, retries=2, backoff_s=0.01)
        results = [ex.run([0, 1], repeats=2) for _ in range(6)]
        ex.close()
    assert all(r.ok for r in results), [r.error for r in results]
    assert ex.last_details is not None and ex.last_details.top_logprobs == {"a": -0.25}


@pytest.mark.parametrize("value", ["SECRETKEY\n", "SECRET KEY", "SECRET\x07KEY", "SECRETKÉY", ""])
def test_an_unusable_key_is_refused_at_load_naming_the_variable_never_the_value(monkeypatch, value):
    monkeypatch.setenv(ENV, value)
    with pytest.raises(SecretError) as info:
        VllmExecutor(4, 2, url="http://127.0.0.1:9", api_key_env=ENV)
    message = str(info.value)
    assert ENV in message and (not value.strip() or "SECRET" not in message)


def test_a_huge_body_keeps_memory_bounded(tmp_path: Path):
    # a child process: pytest's own peak RSS says nothing about the client's
    script = tmp_path / "huge.py"
    script.write_text(
        "import resource, sys, time\n"
        "sys.path.insert(0, sys.argv[1])\n"
        "from tests.hostile_server import HostileServer\n"
        "from faultsense_pipelines.probe.executors.vllm_http import VllmExecutor\n"
        "def gib(request, conn):\n"
        "    if request.path == '/v1/models':\n"
        "        conn.sendall(b'HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n')\n"
        "        block = b'[' * (1 << 20)\n"
        "        for _ in range(1024):\n"
        "            conn.sendall(b'%x\\r\\n%s\\r\\n' % (len(block), block))\n"
        "base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "with HostileServer(gib) as server:\n"
        "    ex = VllmExecutor(4, 2, url=server.url, hidden=64, n_experts=4, timeout_s=20, retries=0)\n"
        "    result = ex.run([0, 1])\n"
        "peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss\n"
        "print(base // 1024, peak // 1024, result.error)\n"
    )
    out = subprocess.run(
        [sys.executable, str(script), str(Path(__file__).resolve().parents[2])], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    base_mb, peak_mb, error = out.stdout.split(" ", 2)
    assert "-byte cap" in error
    assert int(peak_mb) - int(base_mb) < 100, out.stdout  # the 1 GiB body is never held (cap: 16 MiB)
    assert int(peak_mb) < 200 + int(base_mb), out.stdout
