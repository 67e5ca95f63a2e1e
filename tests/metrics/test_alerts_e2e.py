"""End to end, with the real binaries: a sweep with a slow GPU -> `faultsense metrics` shows it ->
Prometheus scrapes it -> the shipped rule fires -> Alertmanager (the shipped example routes)
delivers to a loopback webhook; the fault removed and swept again -> a `resolved` notification.

Slow tier: needs the Debian packages `prometheus` and `prometheus-alertmanager` (.ci/run
installs them). Prometheus and Alertmanager run on free loopback ports with temporary folders
and scrape / evaluate every second (this test's own configuration); the rules and the routes are
the shipped files, only the webhook's address and the grouping delays are the test's.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import UTC, datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import dagster as dg
import httpx
import pytest
import yaml

from faultsense_pipelines.sweeps import run_sweep
from tests.pipeline_helpers import write_fleet

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
RULES = ROOT / "deploy" / "prometheus" / "faultsense-rules.yml"
ROUTES = ROOT / "deploy" / "alertmanager" / "example.yml"
EXE = str(Path(sys.executable).with_name("faultsense"))

FLEET = """
ledger: {ledger}
replicas:
  - name: sim-16
    gpus: 16
    probe_size: 4
    executor: simulated
    topology: {{gpus_per_node: 8, node_names: [host-a, host-b]}}
    simulated: {{faults: [FAULTS], noise_sigma: 0.01, seed: 4}}
"""
SLOW_GPU = "{{gpu: 9, slowdown: 2.0}}"  # braces doubled: the text goes through str.format


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Webhook:
    """A loopback webhook receiver: every POSTed Alertmanager payload, parsed, in order."""

    def __init__(self) -> None:
        received = self.received = []

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                received.append(json.loads(body))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/faultsense"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def alerts(self, name: str, status: str) -> list[dict]:
        return [a for p in list(self.received) for a in p["alerts"] if a["labels"]["alertname"] == name and a["status"] == status]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def start(argv: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(argv, stdout=log.open("w"), stderr=subprocess.STDOUT, start_new_session=True)


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


def wait_for(what: str, check, timeout: float, logs: list[Path]) -> object:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if found := check():
            return found
        time.sleep(0.5)
    tails = "\n".join(f"--- {p.name}\n{p.read_text()[-3000:]}" for p in logs if p.exists())
    pytest.fail(f"{what} did not happen within {timeout:.0f} s\n{tails}")


def ready(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def test_a_slow_gpu_alert_reaches_the_webhook_and_resolves_after_the_fault_is_gone(tmp_path: Path) -> None:
    for binary in ("prometheus", "prometheus-alertmanager"):
        if shutil.which(binary) is None:
            pytest.fail(f"{binary} is not installed: apt-get install -y prometheus prometheus-alertmanager")
    now = datetime.now(UTC).replace(minute=0, second=0, microsecond=0)
    hours = [(now - timedelta(hours=h)).strftime("%Y-%m-%d-%H:00") for h in (2, 1, 0)]
    fleet, ledger = write_fleet(tmp_path, FLEET.replace("FAULTS", SLOW_GPU))
    with dg.DagsterInstance.ephemeral() as instance:
        for hour in hours[:2]:  # two faulty sweeps: M = 2 of the rule's persistence
            (outcome,), _ = run_sweep(fleet, hour=hour, instance=instance)
            assert outcome.confirmed == ["gpu:9 (host-b)"], outcome  # GPU 9 of 8 a node: the second node

        webhook = Webhook()
        routes = yaml.safe_load(ROUTES.read_text())
        routes["route"] |= {"group_wait": "1s", "group_interval": "1s"}
        for receiver in routes["receivers"]:
            for hook in receiver.get("webhook_configs", ()):
                hook["url"] = webhook.url
        (tmp_path / "am.yml").write_text(yaml.safe_dump(routes))
        ports = {name: free_port() for name in ("exporter", "alertmanager", "prometheus")}
        (tmp_path / "prom.yml").write_text(
            yaml.safe_dump(
                {
                    "global": {"scrape_interval": "1s", "evaluation_interval": "1s"},
                    "rule_files": [str(RULES)],
                    "alerting": {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{ports['alertmanager']}"]}]}]},
                    "scrape_configs": [
                        {"job_name": "faultsense", "static_configs": [{"targets": [f"127.0.0.1:{ports['exporter']}"]}]}
                    ],
                }
            )
        )
        logs = [tmp_path / f"{name}.log" for name in ("exporter", "alertmanager", "prometheus")]
        procs = []
        try:
            procs.append(start([EXE, "metrics", "--fleet", str(fleet), "--port", str(ports["exporter"])], logs[0]))
            procs.append(
                start(
                    [
                        "prometheus-alertmanager", f"--config.file={tmp_path / 'am.yml'}", f"--storage.path={tmp_path / 'am'}",
                        f"--web.listen-address=127.0.0.1:{ports['alertmanager']}", "--cluster.listen-address=",
                    ],
                    logs[1],
                )
            )  # fmt: skip
            procs.append(
                start(
                    [
                        "prometheus", f"--config.file={tmp_path / 'prom.yml'}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                        f"--web.listen-address=127.0.0.1:{ports['prometheus']}",
                    ],
                    logs[2],
                )
            )  # fmt: skip
            wait_for("the exporter answering", lambda: ready(f"http://127.0.0.1:{ports['exporter']}/metrics"), 60, logs)
            wait_for("Alertmanager ready", lambda: ready(f"http://127.0.0.1:{ports['alertmanager']}/-/ready"), 60, logs)
            wait_for("Prometheus ready", lambda: ready(f"http://127.0.0.1:{ports['prometheus']}/-/ready"), 60, logs)

            fired = wait_for(
                "the firing notification", lambda: webhook.alerts("FaultsenseComponentConfirmed", "firing"), 120, logs
            )
            labels = fired[0]["labels"]  # type: ignore[index]
            # the fleet file's fault: GPU 9 of sim-16 sits on node 9 // 8 = 1, named host-b
            assert {k: labels.get(k) for k in ("replica", "component", "kind", "node", "gpu", "severity", "team")} == {
                "replica": "sim-16", "component": "gpu:9", "kind": "gpu", "node": "host-b", "gpu": "9",
                "severity": "page", "team": "faultsense",
            }  # fmt: skip
            assert fired[0]["annotations"]["runbook_url"] == "docs/operations.md#faultsensecomponentconfirmed"  # type: ignore[index]

            fleet.write_text(FLEET.replace("FAULTS", "").format(ledger=ledger))  # the GPU repaired
            (outcome,), _ = run_sweep(fleet, hour=hours[2], instance=instance)
            assert outcome.confirmed == [], outcome
            resolved = wait_for(
                "the resolved notification", lambda: webhook.alerts("FaultsenseComponentConfirmed", "resolved"), 120, logs
            )
            assert resolved[0]["labels"]["component"] == "gpu:9"  # type: ignore[index]
            others = {a["labels"]["alertname"] for p in webhook.received for a in p["alerts"]} - {"FaultsenseComponentConfirmed"}
            assert not others, others  # nothing else about a healthy, freshly swept replica
        finally:
            for proc in reversed(procs):
                stop(proc)
            webhook.close()
