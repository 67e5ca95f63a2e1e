"""A malformed ``actions:`` section through the real ``faultsense sweep`` (typer's CliRunner):
one line naming the field, exit 2, nothing run, the ledger as it was, no secret shown."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.cli.errors import MAX_ERROR_CHARS
from faultsense_pipelines.ledger import LedgerStore
from tests.actions.ledger_setup import commit_sweep

runner = CliRunner()
SECRET = "sk-hostile-0123456789abcdef"
HEAD = "ledger: {ledger}\nreplicas:\n  - {{name: sim-a, gpus: 8, probe_size: 4, executor: simulated}}\n"

CASES = [
    ("not-a-list", "actions: {name: x}", ["actions:", "valid list"]),
    ("no-on", "actions: [{name: x, command: [/bin/true]}]", ["actions[0].on:", "Field required"]),
    (
        "both",
        "actions: [{name: x, on: confirmed, command: [/bin/true], webhook: {url: 'http://h'}}]",
        ["actions[0]:", "exactly one"],
    ),
    ("neither", "actions: [{name: x, on: confirmed}]", ["actions[0]:", "exactly one"]),
    ("persist", "actions: [{name: x, on: confirmed, command: [a], persist: [3, 2]}]", ["actions[0].persist:", "1 <= M <= N"]),
    ("typo", "actions: [{name: x, on: confirmed, command: [a], dryrun: false}]", ["actions[0].dryrun:", "Extra inputs"]),
    ("twice", "actions: [{name: x, on: confirmed, command: [a]}, {name: x, on: resolved, command: [a]}]", ["actions[1].name:"]),
    ("replica", "actions: [{name: x, on: confirmed, command: [a], replicas: [nope]}]", ["actions[0].replicas:", "'nope'"]),
    ("env", "actions: [{name: x, on: confirmed, command: [a], env: [FAULTSENSE_X]}]", ["actions[0].env:"]),
    ("timeout", "actions: [{name: x, on: confirmed, command: [a], timeout_s: .nan}]", ["actions[0].timeout_s:"]),
    ("dry-run-text", "actions: [{name: x, on: confirmed, command: [a], dry_run: maybe}]", ["actions[0].dry_run:"]),
    ("kind", "actions: [{name: x, on: confirmed, command: [a], kinds: [gpus]}]", ["actions[0].kinds[0]:"]),
    (
        "password",
        f"actions: [{{name: x, on: confirmed, webhook: {{url: 'https://u:{SECRET}@hooks.example/x'}}}}]",
        ["actions[0].webhook.url:", "u:***@"],
    ),
    (
        "header-value",
        f"actions: [{{name: x, on: confirmed, webhook: {{url: 'https://h/x', headers_env: {{Authorization: 'Bearer {SECRET}'}}}}}}]",
        ["actions[0].webhook.headers_env:"],
    ),
]


@pytest.mark.parametrize(("text", "words"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_a_malformed_actions_section_is_one_line_and_the_ledger_stays(tmp_path: Path, text: str, words: list[str]) -> None:
    ledger = tmp_path / "ledger"
    store = LedgerStore(str(ledger))
    commit_sweep(store, "sim-a", "2026-11-30-07:00", [3])  # an earlier sweep, which must survive
    before = store.version()
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(HEAD.format(ledger=ledger) + text + "\n")
    result = runner.invoke(app, ["sweep", "--fleet", str(fleet), "--hour", "2026-11-30-08:00"])
    assert result.exit_code == 2, result.output[-2000:]
    assert result.stdout == ""
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"error: {fleet}: ") and len(line) <= MAX_ERROR_CHARS, line
    assert "Traceback" not in line and SECRET not in line
    for word in words:
        assert word in line, line
    assert store.version() == before and list(store.read_faults()["component"]) == ["gpu:3"]
