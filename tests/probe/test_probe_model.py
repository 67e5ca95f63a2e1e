"""The probe model: its checkpoint loads in transformers and routes exactly as encoded."""

from __future__ import annotations

import doctest

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from safetensors import safe_open
from transformers import AutoTokenizer, OlmoeForCausalLM

import faultsense_pipelines.probe.memory
import faultsense_pipelines.probe.model
from faultsense_pipelines.probe.checkpoint import read_checkpoint_info, write_checkpoint
from faultsense_pipelines.probe.encoding import gpus_of_routed_experts, probe_embeddings, probe_experts
from faultsense_pipelines.probe.memory import bytes_per_gpu, parameter_counts
from faultsense_pipelines.probe.model import build_probe_model, probe_config, tensor_parallel_problems
from faultsense_pipelines.probe.reference import load_reference_model, reference_forward
from tests.hypothesis_profiles import examples

MIB = 2**20


@pytest.fixture(scope="module")
def slim_checkpoint(tmp_path_factory):
    return write_checkpoint(tmp_path_factory.mktemp("slim"), n_gpus=4, probe_size=2, variant="slim", seed=3)


@pytest.fixture(scope="module")
def slim_model(slim_checkpoint):
    return load_reference_model(slim_checkpoint.path)


def test_transformers_loads_the_checkpoint_with_the_probe_construction(slim_model):
    assert isinstance(slim_model, OlmoeForCausalLM)
    layer = slim_model.model.layers[0]
    assert slim_model.config.num_hidden_layers == 1 and slim_model.config.num_experts_per_tok == 2
    assert layer.self_attn.o_proj.weight.abs().sum().item() == 0.0
    router = layer.mlp.gate.weight.float()  # (E, H)
    assert torch.equal(router[:, :4], torch.eye(4)) and router[:, 4:].abs().sum().item() == 0.0
    for norm in (layer.input_layernorm, layer.post_attention_layernorm, slim_model.model.norm):
        assert torch.all(norm.weight == 1)
    assert layer.mlp.experts.gate_up_proj.float().std().item() > 0.01  # random experts, not zeros


@settings(max_examples=examples(12), deadline=None)
@given(probe=st.sampled_from([(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]), tokens=st.integers(1, 6))
def test_the_loaded_router_selects_exactly_the_intended_experts(slim_model, probe, tokens):
    embeds = probe_embeddings(probe, 4, 4, 2, 2048, tokens)
    routed = reference_forward(slim_model, embeds).routed_experts
    assert torch.equal(routed, probe_experts(probe, 4, 4, 2, tokens))
    assert gpus_of_routed_experts(routed, 4, 4) == [frozenset(probe)] * tokens


@pytest.fixture(scope="module")
def two_experts_per_gpu():
    """A narrow probe model with E = 2n (n=6, k=3): tokens rotate through each GPU's experts."""
    config = probe_config(6, 3)
    config.num_experts, config.intermediate_size = 12, 64
    return build_probe_model(config, seed=1)


@settings(max_examples=examples(12), deadline=None)
@given(data=st.data())
def test_router_selects_the_intended_experts_for_random_gpu_sets(two_experts_per_gpu, data):
    probe = data.draw(st.permutations(range(6)).map(lambda p: tuple(p[:3])), label="probe")
    tokens = data.draw(st.integers(1, 5), label="tokens")
    embeds = probe_embeddings(probe, 6, 12, 3, 2048, tokens)
    routed = reference_forward(two_experts_per_gpu, embeds).routed_experts
    assert torch.equal(routed, probe_experts(probe, 6, 12, 3, tokens))
    assert gpus_of_routed_experts(routed, 6, 12) == [frozenset(probe)] * tokens


def test_a_different_routing_changes_the_next_token_distribution(slim_model):
    a = reference_forward(slim_model, probe_embeddings((0, 1), 4, 4, 2, 2048, 4)).logprobs
    b = reference_forward(slim_model, probe_embeddings((0, 2), 4, 4, 2, 2048, 4)).logprobs
    assert (a - b).abs().max().item() > 0.1


def test_the_tokenizer_loads_offline_and_covers_every_id(slim_checkpoint):
    tokenizer = AutoTokenizer.from_pretrained(str(slim_checkpoint.path))
    assert len(tokenizer) == 256
    assert (tokenizer.bos_token_id, tokenizer.pad_token_id, tokenizer.eos_token_id) == (0, 1, 2)
    assert tokenizer.convert_ids_to_tokens([5, 255]) == ["t5", "t255"]


def test_probe_json_records_how_the_checkpoint_was_built(slim_checkpoint):
    info = read_checkpoint_info(slim_checkpoint.path)
    assert (info.n_gpus, info.probe_size, info.variant, info.seed, info.n_experts, info.hidden) == (4, 2, "slim", 3, 4, 2048)


def test_the_same_seed_gives_the_same_weights():
    config = probe_config(2, 1)
    config.intermediate_size = 32
    a, b = build_probe_model(config, seed=5), build_probe_model(config, seed=5)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))


def test_safetensors_sizes_match_the_computed_parameter_counts(slim_checkpoint):
    config = probe_config(4, 2)
    replicated, per_expert = parameter_counts(config)
    expert_bytes = other_bytes = 0
    with safe_open(str(slim_checkpoint.path / "model.safetensors"), "pt") as f:
        for key in f.keys():  # noqa: SIM118 (safe_open is not iterable)
            t = f.get_tensor(key)
            size = t.numel() * t.element_size()
            if ".experts." in key:
                expert_bytes += size
            else:
                other_bytes += size
    assert other_bytes == replicated * 2
    assert expert_bytes == 4 * per_expert * 2
    assert bytes_per_gpu(config, 4).total_bytes == other_bytes + expert_bytes // 4


def test_paper_variant_bytes_per_gpu_match_a_hand_count_at_4_way():
    # OLMoE-1B-7B first layer: H=2048, I=1024, E=64, V=50304, 16 heads (MHA), untied LM head.
    h, i, e, v = 2048, 1024, 64, 50304
    replicated = 2 * v * h + 4 * h * h + 2 * h + 3 * h + e * h  # vocab x2, q/k/v/o, q/k norms, 3 norms, router
    experts = (e // 4) * 3 * h * i
    memory = bytes_per_gpu(probe_config(4, 2, "paper"), 4)
    assert (memory.replicated_bytes, memory.expert_bytes) == (2 * replicated, 2 * experts)
    assert memory.total_bytes == 647_254_016


def test_paper_variant_counts_match_the_instantiated_model_shapes():
    config = probe_config(8, 4, "paper")
    with torch.device("meta"):
        model = OlmoeForCausalLM(config)
    params = dict(model.named_parameters())
    experts = sum(p.numel() for n, p in params.items() if ".experts." in n)
    others = sum(p.numel() for n, p in params.items() if ".experts." not in n)
    assert parameter_counts(config) == (others, experts // 64)


@pytest.mark.parametrize("n", [1, 2, 4, 8, 16, 32, 64])
def test_slim_variant_fits_64_mib_per_gpu(n):
    assert bytes_per_gpu(probe_config(n, min(n, 4)), n).total_bytes <= 64 * MIB


def _vllm_gathered_widths(config, tp: int) -> tuple[int, int] | None:
    """vLLM's OLMoE under TP, re-derived here: each rank holds ``heads / tp`` query heads and
    ``kv / tp`` KV heads (one replicated head when ``kv < tp``); q and k are all-gathered over
    the ranks before the q/k norms. ``None`` when the query heads do not split evenly."""
    hd = config.hidden_size // config.num_attention_heads
    heads, kv = config.num_attention_heads, config.num_key_value_heads
    if heads % tp or (kv >= tp and kv % tp):
        return None
    kv_per_rank = kv // tp if kv >= tp else 1
    return tp * (heads // tp) * hd, tp * kv_per_rank * hd


@pytest.fixture(scope="module")
def slim8_model():
    return build_probe_model(probe_config(8, 4))


@pytest.mark.parametrize("tp", [1, 2, 4, 8])
def test_slim_variant_shards_evenly_at_tensor_parallel_up_to_8(slim8_model, tp):
    attention = slim8_model.model.layers[0].self_attn
    norm_widths = (attention.q_norm.weight.shape[0], attention.k_norm.weight.shape[0])
    assert _vllm_gathered_widths(slim8_model.config, tp) == norm_widths == (2048, 8 * 32)
    for n in (8, 16, 64, 256):
        assert tensor_parallel_problems(probe_config(n, 4), tp) == []
    # and still within 64 MiB per GPU with expert parallelism over n = 8 (TP only splits more)
    assert bytes_per_gpu(slim8_model.config, 8).total_bytes <= 64 * MIB


def test_one_kv_head_fails_at_tp_2_as_vllm_does():
    one_kv = probe_config(8, 4)
    one_kv.num_key_value_heads = 1  # the former slim attention
    assert _vllm_gathered_widths(one_kv, 2) == (2048, 64)  # against a 32-wide k_norm: the field failure
    assert tensor_parallel_problems(one_kv, 2) == ["num_key_value_heads=1 is not divisible by tensor-parallel size 2"]


@pytest.mark.parametrize(
    ("args", "message"),
    [((0, 1), "n_gpus"), ((4, 5), "probe_size must be an integer in 1..4, got 5"), ((3, 2, "paper"), "n_gpus=3")],
)
def test_probe_config_names_the_bad_value(args, message):
    with pytest.raises(ValueError, match=message):
        probe_config(*args)


def test_docstring_examples_hold():
    for module in (faultsense_pipelines.probe.model, faultsense_pipelines.probe.memory):
        assert doctest.testmod(module).failed == 0
