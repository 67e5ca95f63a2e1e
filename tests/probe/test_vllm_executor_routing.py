"""The ``vllm`` executor's routed-experts check, against a fake server (fast tier).

vLLM returns routed experts only with Model Runner V2, which needs Triton: not on the CPU
build the slow tier serves. ``FakeVllmServer`` is a real loopback HTTP server that answers
like vLLM 0.32 (``/v1/models``, streamed and plain ``/v1/completions``) and returns the
routed experts it is told to (base64 ``.npy``, shape ``(tokens, layers, top_k)``), so the
check can be shown to pass for the intended routing and fail for any other.
"""

from __future__ import annotations

import base64
import io
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest

from faultsense_pipelines.probe.encoding import probe_experts
from faultsense_pipelines.probe.executors.vllm_http import VllmExecutor
from tests.hostile_server import reply_json

pytestmark = pytest.mark.integration  # a loopback HTTP server


class FakeVllmServer:
    """Loopback HTTP server answering like vLLM; ``routed`` is what it says the router did."""

    def __init__(self, root, routed: np.ndarray | None):
        self.routed = routed
        self.bodies: list[dict] = []
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                reply_json(self, 200, {"object": "list", "data": [{"id": "probe", "root": str(root)}]})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                fake.bodies.append(body)
                choice = {"index": 0, "text": "t7", "logprobs": {"top_logprobs": [{"t7": -0.5}]}}
                if not body.get("stream"):
                    choice["routed_experts"] = fake._encoded()
                    return reply_json(self, 200, {"choices": [choice], "metrics": {"time_to_first_token_ms": 1.5}})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                for chunk in ({"choices": [choice]}, {"choices": [], "metrics": {"time_to_first_token_ms": 1.5}}):
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def _encoded(self) -> str | None:
        if self.routed is None:
            return None
        buffer = io.BytesIO()
        np.save(buffer, self.routed)
        return base64.b64encode(buffer.getvalue()).decode()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def checkpoint_root(tmp_path):
    config = {"hidden_size": 2048, "num_experts": 8, "num_experts_per_tok": 2}
    (tmp_path / "config.json").write_text(json.dumps(config))
    return tmp_path


def _run(root, routed, probe=(1, 3)):
    fake = FakeVllmServer(root, routed)
    try:
        with VllmExecutor(4, 2, url=fake.url, tokens=6, check_routing=True) as ex:
            return ex.run(probe, repeats=2), ex.last_details, fake.bodies
    finally:
        fake.close()


def _as_served(experts: np.ndarray) -> np.ndarray:
    return experts[:, None, :].astype(np.uint8)  # (tokens, layers=1, k), vLLM's small dtype


def test_routed_experts_on_the_probe_gpus_pass_the_check(checkpoint_root):
    routed = _as_served(probe_experts((1, 3), 4, 8, 2, 6).numpy())
    result, details, bodies = _run(checkpoint_root, routed)
    assert result.ok, result.error
    assert details.routing == "matched" and details.server_ttft_ms == (1.5, 1.5)
    assert len(result.latencies_ms) == 2
    # two streamed, timed probes and one plain request for the routing check
    assert [b.get("stream", False) for b in bodies] == [True, True, False]
    assert all(b["max_tokens"] == 1 and b["model"] == "probe" for b in bodies)


def test_routed_experts_off_the_probe_gpus_fail_the_probe(checkpoint_root):
    routed = _as_served(probe_experts((1, 2), 4, 8, 2, 6).numpy())  # GPU 2 instead of GPU 3
    result, details, _ = _run(checkpoint_root, routed)
    assert not result.ok and result.latencies_ms == () and details is None
    assert "routing mismatch" in result.error and "[1, 2]" in result.error and "[1, 3]" in result.error


def test_a_server_without_routed_experts_leaves_the_check_skipped(checkpoint_root):
    result, details, _ = _run(checkpoint_root, None)
    assert result.ok and details.routing == "skipped"


def test_probe_embeddings_sent_encode_the_probe(checkpoint_root):
    import torch

    routed = _as_served(probe_experts((1, 3), 4, 8, 2, 6).numpy())
    _, _, bodies = _run(checkpoint_root, routed)
    embeds = torch.load(io.BytesIO(base64.b64decode(bodies[0]["prompt_embeds"])), weights_only=True)
    assert embeds.shape == (6, 2048) and embeds.dtype == torch.bfloat16
    assert embeds.nonzero()[:, 1].reshape(6, 2).tolist() == probe_experts((1, 3), 4, 8, 2, 6).tolist()


def test_a_checkpoint_built_for_another_rank_count_is_refused(checkpoint_root):
    # 8 experts fit 4 GPUs evenly, but the checkpoint was built for 8 expert-parallel ranks:
    # its expert e sits on EP rank e, so probes of a 4-GPU replica would hit the wrong GPUs
    (checkpoint_root / "probe.json").write_text(json.dumps({"n_gpus": 8, "probe_size": 2}))
    result, details, bodies = _run(checkpoint_root, None)
    assert not result.ok and details is None and bodies == []
    assert "rank count mismatch" in result.error and "8 expert-parallel ranks" in result.error and "gpus=4" in result.error
    (checkpoint_root / "probe.json").write_text(json.dumps({"n_gpus": 4, "probe_size": 2}))
    assert _run(checkpoint_root, None)[0].ok
