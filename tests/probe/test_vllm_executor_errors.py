"""The ``vllm`` executor's failure paths, against real loopback HTTP servers (fast tier).

Each server here is a real ``http.server`` that misbehaves in one way (HTTP 500 on every
request, a 404 on every request); they stand in for a broken deployment, not for vLLM.
A failure must come back as a measurement with ``error`` set, after bounded retries.
"""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from faultsense_pipelines.probe.executors.vllm_http import VllmExecutor
from faultsense_pipelines.probe.vllm_server import free_port
from faultsense_pipelines.replica.executor import ProbeExecutor

pytestmark = pytest.mark.integration  # loopback HTTP servers

SECRET = "s3cret-key-do-not-log"


def _serve(status: int):
    hits: list[tuple[str, str | None]] = []

    class Handler(BaseHTTPRequestHandler):
        def _answer(self):
            hits.append((self.path, self.headers.get("Authorization")))
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b'{"error": {"message": "engine is broken", "code": %d}}' % status
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        do_GET = do_POST = _answer

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, hits


@pytest.fixture
def failing_server():
    server, hits = _serve(500)
    yield f"http://127.0.0.1:{server.server_address[1]}", hits
    server.shutdown()
    server.server_close()


def test_the_executor_implements_the_probe_executor_protocol():
    ex = VllmExecutor(4, 2, url="http://127.0.0.1:9")
    assert isinstance(ex, ProbeExecutor) and ex.name == "vllm" and ex.gpus == 4
    ex.close()
    ex.close()  # safe twice


def test_an_unreachable_server_is_an_error_result_after_bounded_retries():
    with VllmExecutor(4, 2, url=f"http://127.0.0.1:{free_port()}", retries=2, backoff_s=0.01) as ex:
        result = ex.run([0, 1], repeats=3)
    assert not result.ok and result.latencies_ms == () and result.gpus == (0, 1)
    assert "unreachable" in result.error and "after 3 attempts" in result.error


def test_a_failing_server_is_retried_then_reported_without_the_api_key(failing_server, monkeypatch):
    url, hits = failing_server
    monkeypatch.setenv("FS_TEST_KEY", SECRET)
    with VllmExecutor(4, 2, url=url, api_key_env="FS_TEST_KEY", retries=1, backoff_s=0.01) as ex:
        result = ex.run([2, 3])
        assert SECRET not in repr(ex)
    assert not result.ok
    assert "HTTP 500" in result.error and "engine is broken" in result.error and SECRET not in result.error
    assert [path for path, _ in hits] == ["/v1/models", "/v1/models"]  # 1 + retries attempts
    assert all(auth == f"Bearer {SECRET}" for _, auth in hits)  # the key is sent, only as a header


def test_a_client_error_is_not_retried():
    server, hits = _serve(404)
    try:
        with VllmExecutor(4, 2, url=f"http://127.0.0.1:{server.server_address[1]}", retries=3) as ex:
            result = ex.run([0, 3])
    finally:
        server.shutdown()
        server.server_close()
    assert "HTTP 404" in result.error and len(hits) == 1


@pytest.mark.parametrize(("gpus", "message"), [([0, 4], "got 4"), ([1, 1], "duplicate GPU id 1"), ([0, 1, 2], "top_k=2")])
def test_a_bad_probe_is_a_value_error_before_any_request(gpus, message):
    with VllmExecutor(4, 2, url=f"http://127.0.0.1:{free_port()}") as ex, pytest.raises(ValueError, match=message):
        ex.run(gpus)


def test_a_missing_api_key_variable_is_named(monkeypatch):
    monkeypatch.delenv("FS_TEST_ABSENT_KEY", raising=False)
    with pytest.raises(ValueError, match="FS_TEST_ABSENT_KEY"):
        VllmExecutor(4, 2, url="http://127.0.0.1:9", api_key_env="FS_TEST_ABSENT_KEY")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [({"url": "127.0.0.1:8000"}, "url must start"), ({"timeout_s": 0}, "timeout_s"), ({"retries": -1}, "retries")],
)
def test_bad_executor_arguments_name_the_bad_value(kwargs, message):
    with pytest.raises(ValueError, match=message):
        VllmExecutor(4, 2, **({"url": "http://127.0.0.1:9"} | kwargs))


def test_starting_a_server_without_the_vllm_venv_says_how_to_create_it(tmp_path):
    from faultsense_pipelines.probe.vllm_server import VllmServer, VllmServerError

    with pytest.raises(VllmServerError, match=r"setup-vllm-cpu\.sh"):
        VllmServer(tmp_path, venv=tmp_path / "no-venv").start()
