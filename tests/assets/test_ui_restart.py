"""Slow tier: what a newcomer sees in headless Chromium -- yesterday's sweep in the run history
after ``faultsense ui`` was stopped (SIGTERM) and started again, and the fleet view after
one sweep.

One ``faultsense sweep`` of the small two-replica fleet, for an hour of yesterday (UTC), is
recorded in a persistent ``DAGSTER_HOME``. ``faultsense ui`` is started on it, stopped with
SIGTERM (every process it started must be gone) and started again. Then:

* the runs page must list both sweep runs (DOM text, ``--dump-dom``);
* the ``fleet_health`` asset page must show the fleet table and the heatmap image inline,
  without a click: the ``heatmap`` metadata is markdown under the UI's 1,000-character
  inline limit (a labelled SVG picture, ``assets/fleet_view.py``). Chromium is driven over the
  DevTools protocol and the test waits for the image to load.

Each page's screenshot is kept under the test's tmp dir and must be a real picture (a PNG of
many colours), not a blank page.

Needs Chromium: ``scripts/install-chromium.sh``. 142 s on the busy 2-core machine.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

import httpx
import pytest

from tests.assets.devtools import DevTools
from tests.assets.test_ui import CHROMIUM_FLAGS, _chromium, _free_port, _render
from tests.pipeline_helpers import write_fleet

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def _faultsense() -> str:
    return str(Path(sys.executable).with_name("faultsense"))


def _start_ui(env: dict[str, str], port: int, log_path: Path) -> subprocess.Popen:
    """``faultsense ui`` on ``port`` in its own process group; returns once it answers."""
    log = log_path.open("w")
    proc = subprocess.Popen(
        [_faultsense(), "ui", "--port", str(port), "--host", "127.0.0.1"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    log.close()
    deadline = time.monotonic() + 240
    while True:
        assert proc.poll() is None, log_path.read_text()[-3000:]
        try:
            if httpx.get(f"http://127.0.0.1:{port}/server_info", timeout=2).status_code == 200:
                return proc
        except httpx.HTTPError:
            pass
        assert time.monotonic() < deadline, "faultsense ui did not answer /server_info"
        time.sleep(1)


def _gone(proc: subprocess.Popen, wait_s: float) -> bool:
    """Whether every process of ``proc``'s group has exited within ``wait_s`` (``proc`` reaped)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        proc.poll()  # reap the group leader, else it lingers as a zombie
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.5)
    return False


def _kill(proc: subprocess.Popen) -> None:
    """Last resort in the finalizer: SIGKILL to whatever is left of the UI's process group."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)


def _colours(png: Path) -> int:
    """Distinct colours in a PNG (Pillow, which matplotlib depends on)."""
    from PIL import Image

    with Image.open(png) as image:
        return len(image.convert("RGB").getcolors(maxcolors=1 << 24) or [])


def _page(chromium: str, url: str, want: list[str], tries: int = 4) -> str:
    """The rendered DOM of ``url`` once it holds every string of ``want`` (or the last try's)."""
    dom = ""
    for _ in range(tries):  # the code location may still be loading on the first visit
        dom = _render(chromium, url, "--dump-dom").stdout
        if all(w in dom for w in want):
            break
        time.sleep(5)
    return dom


#: JavaScript: the inline heatmap ``<img>`` of the fleet_health page (a labelled SVG data URI), or undefined.
_HEATMAP_IMG = "[...document.images].find(i => i.src.startsWith('data:image/svg+xml') && i.alt === 'fleet health now')"
#: The rendered width (px) of the inline heatmap image once it has loaded, else 0.
_HEATMAP_WIDTH = f"(() => {{ const img = {_HEATMAP_IMG}; return img && img.complete ? img.naturalWidth : 0; }})()"
#: Scrolls the inline heatmap image to the middle of the viewport (for the screenshot).
_HEATMAP_INTO_VIEW = f"(() => {{ {_HEATMAP_IMG}.scrollIntoView({{block: 'center'}}); return true; }})()"


def test_a_newcomer_sees_yesterdays_runs_after_a_ui_restart_and_the_fleet_view(tmp_path: Path) -> None:
    chromium = _chromium()
    fleet, _ = write_fleet(tmp_path)
    home = tmp_path / "dagster_home"
    env = {**os.environ, "DAGSTER_HOME": str(home), "FAULTSENSE_FLEET": str(fleet)}
    yesterday = (datetime.now(UTC) - timedelta(days=1)).strftime("%Y-%m-%d-%H:00")
    swept = subprocess.run(
        [_faultsense(), "sweep", "--fleet", str(fleet), "--hour", yesterday],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert swept.returncode == 0, swept.stdout[-2000:] + swept.stderr[-2000:]

    from faultsense_pipelines.sweeps.home import open_instance

    with open_instance(home) as instance:
        sweeps = [r for r in instance.get_runs() if r.job_name == "faultsense_sweep"]
        assert sorted(r.tags["dagster/partition"] for r in sweeps) == [f"{yesterday}|{n}" for n in ("sim-faulty", "sim-healthy")]
        run_ids = [r.run_id for r in sweeps]

    port = _free_port()
    base = f"http://127.0.0.1:{port}"
    first = _start_ui(env, port, tmp_path / "ui-1.log")
    try:
        os.kill(first.pid, signal.SIGTERM)  # faultsense ui replaced itself with dagster dev: this pid
        assert _gone(first, 90), "SIGTERM left processes of the first faultsense ui behind"
        first.wait(timeout=30)
    finally:
        if first.poll() is None:
            _kill(first)

    second = _start_ui(env, port, tmp_path / "ui-2.log")
    try:
        # the run history survived the restart: the runs page lists both sweeps (by short run id)
        short = [r[:8] for r in run_ids]
        dom = _page(chromium, f"{base}/runs", [*short, "faultsense_sweep"])
        (tmp_path / "runs.html").write_text(dom)
        missing = [s for s in [*short, "faultsense_sweep"] if s not in dom]
        assert not missing, f"runs page lacks {missing}"
        assert "Join the Dagster community" not in dom
        shot = tmp_path / "runs.png"
        _render(chromium, f"{base}/runs", f"--screenshot={shot}")
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert _colours(shot) > 50, "the runs page screenshot is (almost) one colour"

        # the fleet view after one sweep: its table (both replicas, the faulty one's components)
        # and the heatmap image inline, with no click (the labelled figure is heatmap_detail)
        want = ["sim-faulty", "sim-healthy", "gpu:5", "heatmap", "heatmap_detail"]
        with DevTools(chromium, tmp_path / "chromium-profile", CHROMIUM_FLAGS[:-1]) as browser:  # no virtual time budget
            browser.open(f"{base}/assets/fleet_health")
            text = browser.wait_for(
                f"(() => {{ const t = document.body.innerText; return {want!r}.every(w => t.includes(w)); }})()"
            )
            assert text, f"fleet_health page lacks one of {want}: {browser.eval('document.body.innerText')[-2000:]}"
            width = browser.wait_for(_HEATMAP_WIDTH)
            # 72 px of hours, the replicas' names to their left (assets/fleet_view.py)
            assert width > 72, f"the inline heatmap did not render (width {width}; 72 px of hours and the names)"
            browser.eval(_HEATMAP_INTO_VIEW)  # the screenshot shows what was asserted, not only the table above it
            shot = tmp_path / "fleet_health.png"
            browser.screenshot(shot)
        assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        assert _colours(shot) > 50, "the fleet_health page screenshot is (almost) one colour"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.kill(second.pid, signal.SIGTERM)
        if not _gone(second, 90):
            _kill(second)
        second.wait(timeout=30)
