"""Slow tier: `dagster dev` from the repository root serves the UI, and headless Chromium
renders the asset graph with FaultSense's assets visible (screenshot kept in tests/artifacts/).

Needs Chromium: ``scripts/install-chromium.sh`` (Debian ``chromium``).
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

REPO = Path(__file__).resolve().parents[1]
ARTIFACTS = REPO / "tests" / "artifacts"
LOCATION = "faultsense_pipelines.definitions"
CHROMIUM_FLAGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--no-first-run", "--hide-scrollbars", "--window-size=1600,1000",
    "--virtual-time-budget=30000",
]
GROUPS = {
    "sweep": ["phase1_probe_run", "phase2_drilldown", "probe_cover", "fault_ledger"],
    "analytics": ["gpu_fault_counts", "replica_daily_health", "repeat_offenders", "fault_ledger"],
}

pytestmark = pytest.mark.slow


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.fail("no Chromium on PATH: run scripts/install-chromium.sh")


def _render(chromium: str, url: str, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([chromium, *CHROMIUM_FLAGS, *extra, url], capture_output=True, text=True, timeout=180)


def _stop(proc: subprocess.Popen) -> None:
    """SIGINT (dagster dev's clean shutdown), then SIGTERM and SIGKILL to its own process group."""
    pgid = os.getpgid(proc.pid)
    for sig, wait_s in ((signal.SIGINT, 30), (signal.SIGTERM, 10), (signal.SIGKILL, 5)):
        try:
            (os.kill if sig == signal.SIGINT else os.killpg)(proc.pid if sig == signal.SIGINT else pgid, sig)
        except ProcessLookupError:
            pass
        deadline = time.monotonic() + wait_s
        while time.monotonic() < deadline:
            proc.poll()
            try:
                os.killpg(pgid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.5)


def test_dagster_dev_renders_the_asset_graph_with_the_assets_visible(tmp_path: Path) -> None:
    chromium = _chromium()
    home = tmp_path / "dagster_home"
    home.mkdir()
    # the repository's instance settings, with the first-visit community modal turned off
    (home / "dagster.yaml").write_text((REPO / "dagster.yaml").read_text() + "\nnux:\n  enabled: false\n")
    env = {**os.environ, "DAGSTER_HOME": str(home), "FAULTSENSE_LEDGER": str(tmp_path / "ledger")}
    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    log = (tmp_path / "dagster-dev.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, str(REPO / "scripts" / "dagster_dev.py"), "-p", str(port), "-h", "127.0.0.1"],
        cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, (tmp_path / "dagster-dev.log").read_text()[-3000:]
            try:
                if httpx.get(f"{base}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "dagster dev did not answer /server_info"
            time.sleep(1)

        for group, assets in GROUPS.items():
            url = f"{base}/locations/{LOCATION}/asset-groups/{group}"
            dom = ""
            for _ in range(3):  # the code location may still be loading on the first visit
                dom = _render(chromium, url, "--dump-dom").stdout
                if all(a in dom for a in assets):
                    break
                time.sleep(5)
            missing = [a for a in assets if a not in dom]
            assert not missing, f"assets {missing} not rendered in group {group}"
            assert "Join the Dagster community" not in dom

        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        shot = ARTIFACTS / "asset_graph_sweep.png"
        shot.unlink(missing_ok=True)
        _render(chromium, f"{base}/locations/{LOCATION}/asset-groups/sweep", f"--screenshot={shot}")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000
    finally:
        _stop(proc)
        log.close()
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # every process dagster dev started is gone
