"""The guards of :func:`faultsense_pipelines.actions.decide`, on hand-written sweep histories.

Each expected decision is worked out by hand from the guard's definition (docs/operations.md,
"Actions"), not read from the code's output.
"""

from __future__ import annotations

import pytest

from faultsense_pipelines.actions import FaultInfo, SweepRecord, decide
from faultsense_pipelines.actions.decide import PriorRow
from faultsense_pipelines.fleet.actions import ActionSpec
from faultsense_pipelines.ledger import make_action_key

GPU = FaultInfo(kind="gpu", status="confirmed", confidence=0.9999, slowdown=2.0, gpu=0)


def _gpu(g: int, status: str = "confirmed", confidence: float | None = 0.9999) -> FaultInfo:
    return FaultInfo(kind="gpu", status=status, confidence=confidence, slowdown=2.0, gpu=g)


def _sweep(hour: str, faults: dict[str, FaultInfo]) -> SweepRecord:
    return SweepRecord(hour=hour, sweep_id=f"run-{hour}", faults=faults)


def _action(**kw) -> ActionSpec:
    return ActionSpec.model_validate({"name": "cordon", "on": "confirmed", "command": ["/bin/true"], "dry_run": False, **kw})


def _h(hour: int, day: int = 1) -> str:
    return f"2026-12-{day:02d}-{hour:02d}:00"


def test_ten_faulty_nodes_with_a_cap_of_two_act_on_two() -> None:
    """10 GPUs on 10 nodes (one GPU per node): max_per_replica 2 -> the 2 most confident run,
    the other 8 are skipped by max_per_replica."""
    faults = {f"gpu:{g}": _gpu(g, confidence=0.99 + g / 1000) for g in range(10)}
    out = decide(_action(max_per_replica=2), "r", [_sweep(_h(8), faults)], [], lambda c, i: f"node{i.gpu}")
    run = [d.verdict.component for d in out if d.what == "run"]
    assert run == ["gpu:9", "gpu:8"]  # confidence 0.999 and 0.998: the highest two
    skipped = [d for d in out if d.what == "skipped"]
    assert len(skipped) == 8 and all(d.reason.startswith("max_per_replica") for d in skipped)


def test_two_gpus_of_one_node_count_as_one_target() -> None:
    """GPUs 0 and 1 share node0, GPU 2 is on node1: a cap of 1 acts on node0 twice (one
    target) and skips node1."""
    faults = {f"gpu:{g}": _gpu(g) for g in range(3)}
    out = decide(_action(max_per_replica=1), "r", [_sweep(_h(8), faults)], [], lambda c, i: f"node{i.gpu // 2}")
    assert {d.verdict.component: d.what for d in out} == {"gpu:0": "run", "gpu:1": "run", "gpu:2": "skipped"}


def test_fleet_cap_counts_other_replicas_rows_in_the_window() -> None:
    """Fleet cap 2; replica a acted on 2 targets 3 hours ago: replica b's fault is skipped by
    max_per_fleet. 30 hours ago (outside window_hours 24) it would not count."""
    prior = [
        PriorRow("cordon", "a", f"gpu:{g}", None, _h(5), "acted", make_action_key("cordon", "a", f"gpu:{g}", _h(5), "confirmed"))
        for g in (1, 2)
    ]
    history = [_sweep(_h(8), {"gpu:4": _gpu(4)})]
    out = decide(_action(max_per_fleet=2), "b", history, prior)
    assert [(d.what, d.reason.split(":")[0]) for d in out] == [("skipped", "max_per_fleet")]
    old = [PriorRow(r.action, r.replica, r.component, None, "2026-11-30-02:00", r.decision, r.action_key) for r in prior]
    assert [d.what for d in decide(_action(max_per_fleet=2), "b", history, old)] == ["run"]


def test_persist_two_of_three() -> None:
    """persist [2, 3]: confirmed now and 2 sweeps ago (2 of the last 3) runs; confirmed only now
    (1 of 3) is skipped."""
    a = _action(persist=[2, 3])
    twice = [_sweep(_h(6), {"gpu:3": _gpu(3)}), _sweep(_h(7), {}), _sweep(_h(8), {"gpu:3": _gpu(3)})]
    assert [d.what for d in decide(a, "r", twice, [])] == ["run"]
    once = [_sweep(_h(5), {"gpu:3": _gpu(3)}), _sweep(_h(6), {}), _sweep(_h(7), {}), _sweep(_h(8), {"gpu:3": _gpu(3)})]
    (d,) = decide(a, "r", once, [])
    assert d.what == "skipped" and d.reason.startswith("persist: confirmed in 1 of the last 3")


def test_min_confidence_and_kinds() -> None:
    """A link is not of kinds [gpu]: no decision at all; a GPU at 0.99 < 0.999 and one without a
    confidence are skipped by min_confidence; a suspect is no verdict to act on."""
    faults = {
        "gpu:1": _gpu(1, confidence=0.99),
        "gpu:2": _gpu(2, confidence=None),
        "gpu:3": _gpu(3, status="suspect"),
        "link:1-2": FaultInfo(kind="link", status="confirmed", confidence=1.0, gpu=1, peer_gpu=2),
    }
    out = decide(_action(kinds=["gpu"], min_confidence=0.999), "r", [_sweep(_h(8), faults)], [])
    assert {d.verdict.component: d.what for d in out} == {"gpu:1": "skipped", "gpu:2": "skipped"}
    assert all(d.reason.startswith("min_confidence") for d in out)


def test_cooldown_and_attempt_cap() -> None:
    """An attempt 5 h ago blocks by cooldown 24 h; with cooldown 0, three earlier attempts hit
    max_attempts 3."""
    history = [_sweep(_h(8), {"gpu:0": _gpu(0)})]

    def row(hour: str) -> PriorRow:
        return PriorRow("cordon", "r", "gpu:0", None, hour, "failed", make_action_key("cordon", "r", "gpu:0", hour, "confirmed"))

    (d,) = decide(_action(cooldown_hours=24), "r", history, [row(_h(3))])
    assert d.what == "skipped" and d.reason == "cooldown_hours: attempted at 2026-12-01 03:00, within 24 h"
    three = [row(_h(h)) for h in (1, 2, 3)]
    (d,) = decide(_action(cooldown_hours=0, max_attempts=3), "r", history, three)
    assert d.what == "skipped" and d.reason.startswith("max_attempts: 3 attempts")
    (d,) = decide(_action(cooldown_hours=0, max_attempts=4), "r", history, three)
    assert d.what == "run"


def test_cooldown_looks_back_only_so_a_later_attempt_never_holds_back_a_backfill() -> None:
    """cooldown_hours 24, one acted attempt on gpu:0 at 2026-12-05 06:00, gpu:0 confirmed in
    every sweep. Worked by hand, hour of the sweep decided -> attempt's distance -> decision:

    - 2026-12-05 03:00 (a backfill run after 06:00's attempt): the attempt is 3 h *later*,
      not before it -> run;
    - 2026-12-05 06:00 again (a re-run of that hour): the same verdict's key -> keep;
    - 2026-12-05 11:00: 5 h before -> skipped, naming 06:00 as the table prints it;
    - 2026-12-06 05:00: 23 h before -> skipped; 2026-12-06 06:00: 24 h, not less -> run.
    """
    attempt = PriorRow(
        "cordon", "r", "gpu:0", None, _h(6, 5), "acted", make_action_key("cordon", "r", "gpu:0", _h(6, 5), "confirmed")
    )
    a = _action(cooldown_hours=24, max_attempts=10)

    def decided(hour: str) -> tuple[str, str]:
        (d,) = decide(a, "r", [_sweep(hour, {"gpu:0": _gpu(0)})], [attempt])
        return d.what, d.reason

    assert decided(_h(3, 5)) == ("run", "guards passed")
    assert decided(_h(6, 5)) == ("keep", "already attempted for this verdict")
    assert decided(_h(11, 5)) == ("skipped", "cooldown_hours: attempted at 2026-12-05 06:00, within 24 h")
    assert decided(_h(5, 6)) == ("skipped", "cooldown_hours: attempted at 2026-12-05 06:00, within 24 h")
    assert decided(_h(6, 6)) == ("run", "guards passed")


def test_dry_runs_count_for_a_dry_run_only() -> None:
    """A dry-run row 2 h ago: a dry-run action is in cooldown (it mirrors the real one); a real
    action is not held back by dry runs."""
    history = [_sweep(_h(8), {"gpu:0": _gpu(0)})]
    prior = [
        PriorRow("cordon", "r", "gpu:0", None, _h(6), "dry_run", make_action_key("cordon", "r", "gpu:0", _h(6), "confirmed"))
    ]
    assert [d.what for d in decide(_action(dry_run=True), "r", history, prior)] == ["skipped"]
    assert [d.what for d in decide(_action(dry_run=False), "r", history, prior)] == ["run"]


def test_an_attempted_key_is_kept_not_decided_again() -> None:
    """The same verdict (same action, replica, component, hour) already has a ``started`` row:
    ``keep`` (a re-run never acts twice), even with every guard passing."""
    history = [_sweep(_h(8), {"gpu:0": _gpu(0)})]
    key = make_action_key("cordon", "r", "gpu:0", _h(8), "confirmed")
    (d,) = decide(_action(), "r", history, [PriorRow("cordon", "r", "gpu:0", None, _h(8), "started", key)])
    assert d.what == "keep" and d.key == key


@pytest.mark.parametrize("k", [1, 2])
def test_resolved_fires_once_after_k_healthy_sweeps(k: int) -> None:
    """Confirmed at 05:00, absent at 06:00 and 07:00: with resolve_after K it fires at hour
    05+K exactly, not before; at the next hour a row of the episode exists, so not again."""
    a = ActionSpec.model_validate(
        {"name": "undrain", "on": "resolved", "command": ["/bin/true"], "dry_run": False, "resolve_after": k}
    )
    sweeps = [_sweep(_h(5), {"gpu:3": _gpu(3)}), _sweep(_h(6), {}), _sweep(_h(7), {})]
    fired = {}
    prior: list[PriorRow] = []
    for i in range(1, len(sweeps)):
        out = decide(a, "r", sweeps[: i + 1], prior)
        fired[sweeps[i].hour] = [d.what for d in out]
        prior += [PriorRow("undrain", "r", d.verdict.component, None, d.verdict.hour, "acted", d.key) for d in out]
    expected = {h: (["run"] if h == _h(5 + k) else []) for h in (_h(6), _h(7))}
    assert fired == expected


def test_resolved_needs_the_last_row_to_be_confirmed() -> None:
    """Confirmed, then inconclusive, then healthy twice: the latest row is inconclusive, so
    nothing was resolved (the fault was never cleared by a confirmed-then-clean run)."""
    a = ActionSpec.model_validate({"name": "undrain", "on": "resolved", "command": ["/bin/true"], "resolve_after": 2})
    sweeps = [
        _sweep(_h(4), {"gpu:3": _gpu(3)}),
        _sweep(_h(5), {"gpu:3": _gpu(3, status="inconclusive")}),
        _sweep(_h(6), {}),
        _sweep(_h(7), {}),
    ]
    assert decide(a, "r", sweeps, []) == []


def test_an_action_targets_the_one_host_of_a_component_and_none_across_hosts() -> None:
    from faultsense_pipelines.actions.engine import node_resolver
    from faultsense_pipelines.actions.history import FaultInfo
    from faultsense_pipelines.fleet import parse_fleet

    fleet = parse_fleet(
        {
            "ledger": "/tmp/l",
            "replicas": [
                {
                    "name": "r",
                    "gpus": 16,
                    "probe_size": 4,
                    "executor": "simulated",
                    "topology": {"gpus_per_node": 8, "node_names": ["a17", "a18"]},
                },
                {"name": "flat", "gpus": 16, "probe_size": 4, "executor": "simulated"},
            ],
        }
    )
    node_of = node_resolver(fleet.replica("r"))
    # GPU g sits on node g // 8: GPU 9 on a18; a link inside a node is that node's; across two, none
    assert node_of("gpu:9", FaultInfo("gpu", "confirmed", gpu=9)) == "a18"
    assert node_of("link:1-6", FaultInfo("link", "confirmed", gpu=1, peer_gpu=6)) == "a17"
    assert node_of("link:3-12", FaultInfo("link", "confirmed", gpu=3, peer_gpu=12)) is None
    assert node_of("nic:a18/rail5", FaultInfo("nic", "confirmed")) == "a18"
    assert node_of("switch:0", FaultInfo("switch", "confirmed")) is None
    assert node_resolver(fleet.replica("flat"))("gpu:9", FaultInfo("gpu", "confirmed", gpu=9)) is None
    # the row's own node first (what the sweep's verdict named, e.g. a ray actor's host)
    assert node_resolver(fleet.replica("flat"))("gpu:9", FaultInfo("gpu", "confirmed", gpu=9, node="h9")) == "h9"
    assert node_of("link:3-12", FaultInfo("link", "confirmed", gpu=3, peer_gpu=12, node="h1,h2")) is None
