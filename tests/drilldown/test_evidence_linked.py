"""The evidence drill-down's set form of "shares a suspect pair with the test set", against
the pair-by-pair look-up it replaces (brute force over small random inputs)."""

from __future__ import annotations

import random

from faultsense_pipelines.localize.evidence.drilldown import EvidenceModel, ProbeIndex, _State, estimate_sigma


def _state(n: int, pairs: set[tuple[int, int]]) -> _State:
    return _State(
        n,
        4,
        EvidenceModel(sigma=0.02, effect=0.18),
        lambda a, b: None,
        random.Random(0),
        [0.0] * n,
        pairs,
        ProbeIndex.build(n, []),
    )


def test_linked_equals_pairwise_lookup() -> None:
    rng = random.Random(7)
    for _ in range(200):
        n = rng.randint(2, 12)
        pairs = {tuple(sorted(rng.sample(range(n), 2))) for _ in range(rng.randint(0, 20))}
        state = _state(n, pairs)  # type: ignore[arg-type]
        for _ in range(5):
            test = set(rng.sample(range(n), rng.randint(1, n)))
            brute = {g for g in range(n) if any(state.suspect_link(g, s) for s in test)}
            assert state.linked(test) == brute


def test_linked_hand_worked() -> None:
    state = _state(6, {(0, 1), (1, 2), (3, 4)})
    assert state.linked({1}) == {0, 2}
    assert state.linked({0, 3}) == {1, 4}
    assert state.linked({5}) == set()
    assert state.linked({0, 1}) == {0, 1, 2}  # 0 and 1 are linked to each other


def test_estimate_sigma_leaves_out_suspects() -> None:
    # the non-suspect excess has MAD 0.1 (values 0, +-0.1): 1.4826 x 0.1; the suspect's 5.0 is left out
    excess = [0.0, 0.1, -0.1, 0.0, 0.1, -0.1, 0.0, 5.0]
    lat = [[1.0]] * len(excess)
    assert abs(estimate_sigma(lat, excess, [7]) - 1.4826 * 0.1) < 1e-12
