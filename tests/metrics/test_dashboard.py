"""The Grafana dashboard (deploy/grafana/faultsense-fleet.json) asks only for series the exporter
serves (default tier); its queries parse as PromQL (slow tier: promtool)."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from prometheus_client import CollectorRegistry, generate_latest

from faultsense_pipelines.ledger import LedgerStore
from faultsense_pipelines.metrics import FleetCollector

ROOT = Path(__file__).resolve().parents[2]
DASHBOARD = json.loads((ROOT / "deploy" / "grafana" / "faultsense-fleet.json").read_text())


def queries() -> list[str]:
    out = [t["expr"] for p in DASHBOARD["panels"] for t in p["targets"]]
    out += [v["query"]["query"] for v in DASHBOARD["templating"]["list"] if isinstance(v.get("query"), dict)]
    return out


def test_every_series_the_dashboard_asks_for_is_one_the_exporter_serves(tmp_path: Path) -> None:
    collector = FleetCollector(LedgerStore(str(tmp_path / "empty")))
    registry = CollectorRegistry(auto_describe=False)
    registry.register(collector)
    text = generate_latest(registry).decode()
    collector.close()
    # every family's name (samples or none), and every sample's (a counter's ends in _total)
    names = set(re.findall(r"^# TYPE (\S+) ", text, re.M)) | set(re.findall(r"^(faultsense_\w+)[{ ]", text, re.M))
    asked = {n for q in queries() for n in re.findall(r"\bfaultsense_[a-z_]+", q)}
    assert asked and asked <= names, asked - names
    assert len({p["id"] for p in DASHBOARD["panels"]}) == len(DASHBOARD["panels"])


@pytest.mark.slow  # promtool (Debian package prometheus)
def test_every_dashboard_query_parses_as_promql(tmp_path: Path) -> None:
    promtool = shutil.which("promtool")
    if promtool is None:
        pytest.fail("promtool is not installed: apt-get install -y prometheus")
    rules = [{"record": f"dashboard:query_{i}", "expr": q.replace("$replica", ".*")} for i, q in enumerate(queries())
             if not q.startswith("label_values(")]  # fmt: skip
    path = tmp_path / "dashboard-queries.yml"
    path.write_text(yaml.safe_dump({"groups": [{"name": "dashboard", "rules": rules}]}))
    checked = subprocess.run([promtool, "check", "rules", str(path)], capture_output=True, text=True)
    assert checked.returncode == 0, checked.stdout + checked.stderr
