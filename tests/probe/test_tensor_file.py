"""``torch.save``'s format written without torch (probe/tensor_file.py), checked against torch itself.

What the ``vllm`` executor sends as ``prompt_embeds`` must be what ``torch.load(...,
weights_only=True)`` -- vLLM's reader -- turns back into the probe's bf16 embeddings, bit for
bit; and the executor's client process must never import torch (its memory: the hostile
suite stays under 200 MB, ``bench/results/vllm_hostile_rss.md``).
"""

from __future__ import annotations

import io
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from faultsense_pipelines.probe.encoding import probe_embedding_bits, probe_embeddings, probe_expert_ids, probe_experts
from faultsense_pipelines.probe.tensor_file import bf16_bits, save_bf16

ROOT = Path(__file__).resolve().parents[2]


def _load(data: bytes) -> torch.Tensor:
    return torch.load(io.BytesIO(data), weights_only=True)


@pytest.mark.parametrize("shape", [(1,), (5, 64), (2, 3, 4), (300, 70), (16, 2048)])
def test_a_saved_array_loads_as_the_bf16_tensor_torch_rounds_to(shape: tuple[int, ...]) -> None:
    rng = np.random.default_rng(sum(shape))
    values = (rng.standard_normal(shape) * 10.0 ** rng.integers(-40, 38, shape)).astype(np.float32)
    flat = values.reshape(-1)
    flat[: min(8, flat.size)] = np.array([0.0, -0.0, np.inf, -np.inf, 1e-45, 3.4e38, 1.00390625, 1.01171875])[: min(8, flat.size)]
    got = _load(save_bf16(bf16_bits(values)))
    want = torch.from_numpy(values).to(torch.bfloat16)  # torch's own rounding, ties to even
    assert got.dtype == torch.bfloat16 and tuple(got.shape) == shape and got.is_contiguous()
    assert torch.equal(got.view(torch.int16), want.view(torch.int16))


def test_nan_stays_nan() -> None:
    got = _load(save_bf16(bf16_bits(np.array([np.nan, 1.0], dtype=np.float32))))
    assert torch.isnan(got[0]) and got[1].item() == 1.0


@pytest.mark.parametrize(
    ("gpus", "n", "experts", "k", "hidden", "tokens"), [((1, 3), 4, 8, 2, 64, 6), ((0, 2, 5, 7), 8, 64, 4, 2048, 16)]
)
def test_the_probe_embeddings_sent_are_torchs_probe_embeddings_bit_for_bit(gpus, n, experts, k, hidden, tokens) -> None:
    sent = _load(save_bf16(probe_embedding_bits(gpus, n, experts, k, hidden, tokens)))
    assert torch.equal(sent.view(torch.int16), probe_embeddings(gpus, n, experts, k, hidden, tokens).view(torch.int16))
    assert probe_expert_ids(gpus, n, experts, k, tokens).tolist() == probe_experts(gpus, n, experts, k, tokens).tolist()


def test_a_non_uint16_array_is_refused() -> None:
    with pytest.raises(ValueError, match="uint16"):
        save_bf16(np.zeros(3, dtype=np.float32))


_CLIENT = """
import sys
def hwm():  # peak RSS of this process, MB (VmHWM: ru_maxrss keeps a forking parent's size)
    return int(next(l for l in open("/proc/self/status") if l.startswith("VmHWM")).split()[1]) // 1024
sys.path.insert(0, sys.argv[1])
from faultsense_pipelines.probe.executors.vllm_http import VllmExecutor
from tests.hostile_server import HostileServer, models_card, send, send_json, send_stream, token_chunk
def ok(request, conn):
    if request.path == "/v1/models":
        send_json(conn, 200, models_card())
    else:
        send_stream(conn, [token_chunk(-0.25)])
def gib(request, conn):
    conn.sendall(b"HTTP/1.1 200 OK\\r\\nContent-Type: application/json\\r\\nTransfer-Encoding: chunked\\r\\n\\r\\n")
    block = b"[" * (1 << 20)
    for _ in range(1024):
        conn.sendall(b"%x\\r\\n%s\\r\\n" % (len(block), block))
results = []
for behaviour in (ok, gib, lambda r, c: send(c, 200, "<html>ok</html>", "text/html")):
    with HostileServer(behaviour) as server:
        ex = VllmExecutor(4, 2, url=server.url, hidden=2048, n_experts=4, tokens=16, timeout_s=20, retries=0)
        results.append(ex.run([0, 1], repeats=2))
        ex.close()
peak = hwm()
print(int(results[0].ok), int(not results[1].ok and "-byte cap" in results[1].error), int(not results[2].ok), peak,
      int("torch" in sys.modules))
"""


@pytest.mark.integration  # a child process and loopback servers
def test_the_vllm_client_never_imports_torch_and_stays_under_200_mb() -> None:
    out = subprocess.run([sys.executable, "-c", _CLIENT, str(ROOT)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    ok, capped, refused, peak_mb, torch_loaded = (int(v) for v in out.stdout.split()[-5:])
    assert (ok, capped, refused) == (1, 1, 1), out.stdout  # a probe measured; a 1 GiB body capped; not-JSON refused
    assert torch_loaded == 0
    assert peak_mb < 200, out.stdout  # VmHWM of the whole client process
