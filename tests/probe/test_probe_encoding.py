"""Probe encoding: GPU sets <-> routed experts <-> embeddings (probe/encoding.py)."""

from __future__ import annotations

import itertools

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from faultsense_pipelines.probe.encoding import (
    expert_range,
    experts_per_gpu,
    gpu_of_expert,
    gpus_of_routed_experts,
    probe_embeddings,
    probe_experts,
)
from tests.hypothesis_profiles import examples


def test_linear_placement_matches_hand_worked_example():
    # 4 GPUs, 8 experts: GPU0 {0,1}, GPU1 {2,3}, GPU2 {4,5}, GPU3 {6,7}
    assert [list(expert_range(g, 4, 8)) for g in range(4)] == [[0, 1], [2, 3], [4, 5], [6, 7]]
    assert [gpu_of_expert(e, 4, 8) for e in range(8)] == [0, 0, 1, 1, 2, 2, 3, 3]


@pytest.mark.parametrize(("n", "e"), [(3, 64), (4, 0), (0, 8), (4, -4)])
def test_experts_per_gpu_rejects_uneven_placement(n, e):
    with pytest.raises(ValueError, match=str(e) if n else "n_gpus"):
        experts_per_gpu(n, e)


def test_probe_experts_exercises_every_expert_of_each_member():
    experts = probe_experts([0, 2], n_gpus=4, n_experts=16, top_k=2, tokens=4)
    assert experts[:, 0].tolist() == [0, 1, 2, 3]
    assert experts[:, 1].tolist() == [8, 9, 10, 11]


@pytest.mark.parametrize(
    ("gpus", "message"),
    [([1, 1], "duplicate GPU id 1"), ([0, 4], "got 4"), ([-1, 2], "got -1"), ([0, 1, 2], "top_k=2")],
)
def test_probe_experts_names_the_bad_value(gpus, message):
    with pytest.raises(ValueError, match=message):
        probe_experts(gpus, n_gpus=4, n_experts=8, top_k=2, tokens=2)


def test_probe_embeddings_have_exactly_k_ones_per_token():
    emb = probe_embeddings([1, 3], n_gpus=4, n_experts=8, top_k=2, hidden=16, tokens=5)
    assert emb.shape == (5, 16) and emb.dtype == torch.bfloat16
    assert emb.sum(dim=1).tolist() == [2.0] * 5
    assert emb[:, 8:].abs().sum().item() == 0.0


def test_probe_embeddings_reject_hidden_smaller_than_experts():
    with pytest.raises(ValueError, match="hidden must be >= n_experts=8, got 4"):
        probe_embeddings([0], n_gpus=4, n_experts=8, top_k=1, hidden=4, tokens=1)


def test_routed_experts_reject_out_of_range_ids():
    with pytest.raises(ValueError, match="got 8"):
        gpus_of_routed_experts([[0, 8]], n_gpus=4, n_experts=8)


@settings(max_examples=examples(60), deadline=None)
@given(data=st.data())
def test_encoding_round_trips_for_every_probe(data):
    n = data.draw(st.integers(1, 8), label="n")
    per = data.draw(st.integers(1, 4), label="experts per GPU")
    k = data.draw(st.integers(1, n), label="k")
    gpus = data.draw(st.permutations(range(n)).map(lambda p: p[:k]), label="gpus")
    tokens = data.draw(st.integers(1, 9), label="tokens")
    experts = probe_experts(gpus, n, n * per, k, tokens)
    assert gpus_of_routed_experts(experts, n, n * per) == [frozenset(gpus)] * tokens
    # top-k of the embeddings (what an identity router computes) gives back the same experts
    emb = probe_embeddings(gpus, n, n * per, k, hidden=n * per + 3, tokens=tokens, dtype=torch.float32)
    top = emb.topk(k, dim=1).indices.sort(dim=1).values
    assert torch.equal(top, experts.sort(dim=1).values)


def test_every_k_subset_of_eight_gpus_decodes_to_itself():
    for gpus in itertools.combinations(range(8), 3):
        experts = probe_experts(gpus, 8, 16, 3, tokens=2)
        assert gpus_of_routed_experts(experts.numpy(), 8, 16) == [frozenset(gpus)] * 2


def test_docstring_examples_hold():
    import doctest

    import faultsense_pipelines.probe.encoding

    assert doctest.testmod(faultsense_pipelines.probe.encoding).failed == 0
