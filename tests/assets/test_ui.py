"""Slow tier: `dagster dev` from the repository root serves the UI, and headless Chromium
renders the asset graph with FaultSense's assets visible (screenshot kept in tests/artifacts/).

Needs Chromium: ``scripts/install-chromium.sh`` (Debian ``chromium``).
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from faultsense_pipelines.assets.fleet_view import HEALTH_COLORS
from tests.assets.devtools import DevTools
from tests.pipeline_helpers import stop_process_group

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "tests" / "artifacts"
LOCATION = "faultsense_pipelines.definitions"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
    "--hide-scrollbars",
    "--window-size=1600,1000",
    "--virtual-time-budget=30000",
]
GROUPS = {
    "sweep": ["phase1_probe_run", "phase2_drilldown", "probe_cover", "fault_ledger"],
    "analytics": ["gpu_fault_counts", "replica_daily_health", "repeat_offenders", "shared_component_counts", "fault_ledger"],
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


@pytest.fixture(scope="module")
def dagster_dev(tmp_path_factory: pytest.TempPathFactory):
    """``faultsense ui`` (``dagster dev`` on a fresh persistent instance) on a free port; yields
    (base URL, ledger path)."""
    tmp = tmp_path_factory.mktemp("ui")
    home = tmp / "dagster_home"  # faultsense ui creates it with its dagster.yaml (no first-visit modal)
    ledger = tmp / "ledger"
    env = {**os.environ, "DAGSTER_HOME": str(home), "FAULTSENSE_LEDGER": str(ledger)}
    base = f"http://127.0.0.1:{_free_port()}"
    log_path = tmp / "dagster-dev.log"
    log = log_path.open("w")
    proc = subprocess.Popen(
        [str(Path(sys.executable).with_name("faultsense")), "ui", "--port", base.rsplit(":", 1)[1], "--host", "127.0.0.1"],
        cwd=REPO,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        deadline = time.monotonic() + 240
        while True:
            assert proc.poll() is None, log_path.read_text()[-3000:]
            try:
                if httpx.get(f"{base}/server_info", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            assert time.monotonic() < deadline, "dagster dev did not answer /server_info"
            time.sleep(1)
        yield base, ledger
    finally:
        stop_process_group(proc, interrupt_s=30, term_s=10, kill_s=5)
        log.close()
    with pytest.raises(ProcessLookupError):
        os.killpg(proc.pid, 0)  # every process dagster dev started is gone


def test_dagster_dev_renders_the_asset_graph_with_the_assets_visible(dagster_dev) -> None:
    base, _ = dagster_dev
    chromium = _chromium()
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


_LAUNCH = """
mutation Launch($params: LaunchBackfillParams!) {
  launchPartitionBackfill(backfillParams: $params) {
    __typename
    ... on LaunchBackfillSuccess { backfillId }
    ... on PythonError { message }
    ... on InvalidStepError { invalidStepKey }
    ... on PartitionSetNotFoundError { message }
  }
}
"""
_STATUS = """
query Status($id: String!) {
  partitionBackfillOrError(backfillId: $id) { ... on PartitionBackfill { status } ... on PythonError { message } }
}
"""

_RUNS = """
query Runs($id: String!) {
  runsOrError(filter: {tags: [{key: "dagster/backfill", value: $id}]}) {
    ... on Runs { results { runId status startTime endTime } }
  }
}
"""


def _graphql(base: str, query: str, variables: dict) -> dict:
    reply = httpx.post(f"{base}/graphql", json={"query": query, "variables": variables}, timeout=60)
    reply.raise_for_status()
    body = reply.json()
    assert "errors" not in body, body
    return body["data"]


def test_a_backfill_over_three_hours_launched_like_the_ui_does_writes_three_partitions(dagster_dev) -> None:
    base, ledger = dagster_dev
    hours = ["2026-11-30-05:00", "2026-11-30-06:00", "2026-11-30-07:00"]
    deadline = time.monotonic() + 120
    while True:  # the fleet sensor adds the replica partitions shortly after start
        params = {
            "assetSelection": [{"path": [a]} for a in ("phase1_probe_run", "phase2_drilldown", "fault_ledger")],
            "partitionNames": [f"{h}|sim-64" for h in hours],
        }
        launched = _graphql(base, _LAUNCH, {"params": params})["launchPartitionBackfill"]
        if launched["__typename"] == "LaunchBackfillSuccess":
            break
        assert time.monotonic() < deadline, launched
        time.sleep(5)
    status, deadline = "", time.monotonic() + 420
    while status not in ("COMPLETED", "COMPLETED_SUCCESS", "COMPLETED_FAILED", "FAILED", "CANCELED"):
        assert time.monotonic() < deadline, f"backfill still {status}"
        time.sleep(5)
        status = _graphql(base, _STATUS, {"id": launched["backfillId"]})["partitionBackfillOrError"].get("status", "")
    assert status in ("COMPLETED", "COMPLETED_SUCCESS"), status
    from deltalake import DeltaTable

    faults = DeltaTable(str(ledger / "delta")).to_pandas(filters=[("dataset", "=", "fault_ledger")])
    assert sorted(set(faults["batch"])) == [f"faultsense-sim-64-h0{h}" for h in (5, 6, 7)]
    assert sorted(set(faults["component"])) == ["gpu:17", "link:3-40"]
    assert len(faults) == 3 * 2

    # the per-replica run limit of dagster.yaml: the three sweeps of sim-64 never overlapped
    runs = _graphql(base, _RUNS, {"id": launched["backfillId"]})["runsOrError"]["results"]
    spans = sorted((r["startTime"], r["endTime"]) for r in runs)
    assert len(spans) == 3 and all(r["status"] == "SUCCESS" for r in runs)
    assert all(end <= next_start for (_, end), (next_start, _) in itertools.pairwise(spans)), spans


def test_fleet_health_after_an_out_of_order_backfill_shows_the_latest_hour_and_the_faulty_first(dagster_dev) -> None:
    """The operator's "now" in the UI: sweep 06:00, then backfill 03:00 (both with ``faultsense
    sweep`` on the UI's instance and ledger); the ``fleet_health`` page shows 06:00, the faulty
    replicas before the healthy one, each confirmed component, and the heatmap picture with
    every replica; at 1,000 and 1,600 px the heatmap and its colour key lie whole inside what
    the page shows (the fleet table too at 1,600 px), the latest hour's faulty cells at the
    picture's right edge in the screenshot (kept in tests/artifacts/)."""
    base, ledger = dagster_dev
    env = {**os.environ, "FAULTSENSE_LEDGER": str(ledger), "DAGSTER_HOME": str(ledger.parent / "dagster_home")}
    replicas = ["--replica", "sim-64", "--replica", "sim-128", "--replica", "sim-256"]
    cli = str(Path(sys.executable).with_name("faultsense"))
    for hour in ("2026-12-01-06:00", "2026-12-01-03:00"):  # the backfill of the older hour last (after the 11-30 hours above)
        done = subprocess.run(
            [cli, "sweep", "--hour", hour, *replicas], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
        )
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    chromium = _chromium()
    url = f"{base}/assets/fleet_health"
    dom = ""
    for _ in range(3):
        dom = _render(chromium, url, "--dump-dom").stdout
        if "sim-256" in dom and "2026-12-01-06:00" in dom:
            break
        time.sleep(5)
    # the latest hour, whatever order the hours were swept in: end_hour, and every replica's last sweep
    assert "2026-12-01-06:00" in dom and "last sweep of every swept replica: 06:00 (" in dom
    # the inline heatmap and its colour key are drawn as pictures, not behind a link or as text
    for alt in ("fleet health now", "health colours"):
        tags = re.findall(rf'<img[^>]*alt="{alt}"[^>]*>', dom)
        assert len(tags) == 1 and 'src="data:image/svg+xml;base64,' in tags[0], alt
    first = {name: dom.index(f">{name}<") for name in ("sim-64", "sim-128", "sim-256")}
    assert first["sim-64"] < first["sim-256"] and first["sim-128"] < first["sim-256"], first  # faulty first
    for component in ("gpu:17", "link:3-40", "link:12-99"):
        assert f">{component}<" in dom
    # the "faults of sim-64" link opens that partition of fault_ledger, with its faults
    link = re.search(r'href="(/assets/fault_ledger\?view=partitions&amp;partition=2026-12-01-06%3A00%7Csim-64)"', dom)
    assert link, "no link to sim-64's faulty partition"
    page = _render(chromium, base + link.group(1).replace("&amp;", "&"), "--dump-dom").stdout
    assert "2026-12-01-06:00|sim-64" in page and "gpu:17" in page and "No faults found" not in page
    # the heatmap, its key and the fleet table laid out at 1,000 and 1,600 px: measured in the DOM
    # (inside every clipping box: Dagster's metadata table scrolls sideways in a narrower box)
    # and seen in the screenshot (the latest hour's faulty cells at the picture's right edge)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with DevTools(chromium, ledger.parent / "chromium-profile", CHROMIUM_FLAGS[:-1]) as browser:
        for width in (1000, 1600):
            browser.resize(width, 2000)
            browser.open(url)
            seen = browser.wait_for(_LAID_OUT)
            assert seen and seen["heatmap"] and seen["key"], f"at {width} px the heatmap did not load: {seen}"
            for what in ("heatmap", "key") + (("fleet",) if width == 1600 else ()):
                box = seen[what]
                assert box["left"] >= box["clip_left"] and box["right"] <= box["clip_right"], f"{what} cut at {width} px: {box}"
            shot = ARTIFACTS / f"fleet_health_{width}.png"
            shot.unlink(missing_ok=True)
            browser.screenshot(shot)
            heatmap = seen["heatmap"]
            red = _rightmost(shot, heatmap, HEALTH_COLORS["faulty"])
            # the right-most column (72 px for 24 hours: 3 px) is 06:00, where sim-64 and sim-128 are faulty
            assert red is not None and heatmap["right"] - red <= 9, (
                f"at {width} px no faulty cell at the latest hour: {red}, {heatmap}"
            )


#: JavaScript: where the fleet_health page's inline heatmap, colour key and fleet table lie (CSS px,
#: ``left``/``right``) and the narrowest box their clipping ancestors leave them
#: (``clip_left``/``clip_right``); null until the heatmap image has loaded.
_LAID_OUT = """(() => {
  const box = (el) => {
    if (!el) return null;
    const r = el.getBoundingClientRect();
    let left = 0, right = innerWidth;
    for (let a = el.parentElement; a; a = a.parentElement) {
      if (getComputedStyle(a).overflowX !== 'visible') {
        const c = a.getBoundingClientRect();
        left = Math.max(left, c.left); right = Math.min(right, c.right);
      }
    }
    return {left: r.left, right: r.right, top: r.top, bottom: r.bottom, clip_left: left, clip_right: right};
  };
  const img = (alt) => [...document.images].find(i => i.alt === alt && i.complete && i.naturalWidth > 0);
  const heatmap = img('fleet health now');
  if (!heatmap) return null;
  const fleet = [...document.querySelectorAll('table')].find(
    t => !t.querySelector('table') && t.innerText.includes('component') && t.innerText.includes('sim-64'));
  return {heatmap: box(heatmap), key: box(img('health colours')), fleet: box(fleet)};
})()"""


def _rightmost(png: Path, box: dict, color: str) -> float | None:
    """The right-most x (CSS px = screenshot px) inside ``box`` where the screenshot ``png`` is ``color``."""
    from PIL import Image

    want = tuple(bytes.fromhex(color[1:]))
    with Image.open(png) as image:
        rgb = image.convert("RGB")
        xs = range(int(box["left"]), min(int(box["right"]) + 1, rgb.width))
        ys = range(int(box["top"]), min(int(box["bottom"]) + 1, rgb.height))
        found = [x for x in xs for y in ys if rgb.getpixel((x, y)) == want]
    return max(found) + 1.0 if found else None
