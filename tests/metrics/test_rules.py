"""The shipped alert rules and routes, checked by the real tools (slow tier: the Debian packages
`prometheus` and `prometheus-alertmanager`, which .ci/run installs)."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.fail(f"{name} is not installed: apt-get install -y prometheus prometheus-alertmanager")
    return found


def test_promtool_checks_the_rules_and_passes_their_unit_tests() -> None:
    checked = subprocess.run([tool("promtool"), "check", "rules", str(DEPLOY / "prometheus/faultsense-rules.yml")],
                             capture_output=True, text=True)  # fmt: skip
    assert checked.returncode == 0, checked.stdout + checked.stderr
    tested = subprocess.run([tool("promtool"), "test", "rules", str(DEPLOY / "prometheus/faultsense-rules.test.yml")],
                            capture_output=True, text=True)  # fmt: skip
    assert tested.returncode == 0 and "SUCCESS" in tested.stdout, tested.stdout + tested.stderr


def test_amtool_accepts_the_example_routes() -> None:
    checked = subprocess.run(
        [tool("amtool"), "check-config", str(DEPLOY / "alertmanager/example.yml")], capture_output=True, text=True
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr


def test_every_alert_has_routing_labels_a_runbook_into_the_docs_and_a_unit_test() -> None:
    rules = yaml.safe_load((DEPLOY / "prometheus/faultsense-rules.yml").read_text())["groups"][0]["rules"]
    tests = (DEPLOY / "prometheus/faultsense-rules.test.yml").read_text()
    docs = (ROOT / "docs/operations.md").read_text()
    anchors = {re.sub(r"[^a-z0-9 -]", "", h.strip().lower()).replace(" ", "-") for h in re.findall(r"^#+ (.+)$", docs, re.M)}
    for rule in rules:
        name = rule["alert"]
        assert rule["labels"]["team"] == "faultsense" and rule["labels"]["severity"] in ("page", "ticket"), name
        runbook = rule["annotations"]["runbook_url"]
        assert runbook.startswith("docs/operations.md#") and runbook.split("#", 1)[1] in anchors, (name, runbook)
        assert f"alertname: {name}" in tests, f"{name} has no promtool unit test"
