"""Where the ledger lives: --ledger, else $FAULTSENSE_LEDGER, else the fleet file's optional ``ledger:``."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.fleet import FleetError, load_fleet
from faultsense_pipelines.ledger.location import LEDGER_ENV, choose_ledger_uri

runner = CliRunner()

NO_LEDGER_FLEET = """
replicas:
  - name: sim-8
    gpus: 8
    probe_size: 4
    executor: simulated
    simulated: {noise_sigma: 0.01, seed: 1}
"""
#: the three places the error line must name
PLACES = ("`ledger:` in the fleet file", "--ledger", "$FAULTSENSE_LEDGER")


@pytest.fixture
def fleet_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A fleet file with no ``ledger:``, and no ``$FAULTSENSE_LEDGER`` set."""
    monkeypatch.delenv(LEDGER_ENV, raising=False)
    path = tmp_path / "fleet.yaml"
    path.write_text(NO_LEDGER_FLEET)
    return path


def test_the_option_wins_over_the_variable_which_wins_over_the_file(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(LEDGER_ENV, "/env/ledger")
    assert choose_ledger_uri("/cli/ledger", "/file/ledger") == "/cli/ledger"
    assert choose_ledger_uri(None, "/file/ledger") == "/env/ledger"
    assert choose_ledger_uri("", "/file/ledger") == "/env/ledger"  # an empty option is not given
    monkeypatch.setenv(LEDGER_ENV, "")  # nor is an empty variable
    assert choose_ledger_uri(None, "/file/ledger") == "/file/ledger"


def test_the_loader_accepts_a_fleet_without_ledger_and_the_resolver_names_all_three_places(fleet_file: Path) -> None:
    fleet = load_fleet(fleet_file)
    assert fleet.ledger is None
    with pytest.raises(FleetError) as err:
        choose_ledger_uri(None, fleet.ledger, fleet_file)
    message = str(err.value)
    assert message.startswith(f"{fleet_file}: no ledger given") and "\n" not in message
    assert all(place in message for place in PLACES), message


def test_the_definitions_take_the_ledger_from_the_variable_or_refuse_to_load(
    fleet_file: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from faultsense_pipelines.definitions import build_definitions

    with pytest.raises(
        FleetError, match=r"no ledger given: set `ledger:` in the fleet file, pass --ledger, or set \$FAULTSENSE_LEDGER"
    ):
        build_definitions(fleet_file)
    assert build_definitions(fleet_file, str(tmp_path / "cli")).resources["ledger"].uri == str(tmp_path / "cli")
    monkeypatch.setenv(LEDGER_ENV, str(tmp_path / "env"))
    assert build_definitions(fleet_file).resources["ledger"].uri == str(tmp_path / "env")


@pytest.mark.parametrize("command", [["sweep"], ["ledger", "show"]])
def test_without_any_ledger_the_cli_prints_one_line_naming_all_three_and_exits_2(fleet_file: Path, command: list[str]) -> None:
    done = runner.invoke(app, [*command, "--fleet", str(fleet_file)], env={"COLUMNS": "250", LEDGER_ENV: ""})
    assert done.exit_code == 2, done.output
    lines = done.output.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("error: ") and "no ledger given" in lines[0], done.output
    assert all(place in lines[0] for place in PLACES), done.output


def test_ledger_show_reads_the_ledger_the_variable_names_when_the_fleet_has_none(fleet_file: Path, tmp_path: Path) -> None:
    (tmp_path / "env-ledger").mkdir()
    done = runner.invoke(
        app, ["ledger", "show", "--fleet", str(fleet_file)], env={"COLUMNS": "250", LEDGER_ENV: str(tmp_path / "env-ledger")}
    )
    assert done.exit_code == 0, done.output
    assert "env-ledger" in done.output


@pytest.mark.integration
def test_a_sweep_of_a_fleet_without_ledger_writes_where_the_option_says(fleet_file: Path, tmp_path: Path) -> None:
    ledger = tmp_path / "cli-ledger"
    done = runner.invoke(
        app, ["sweep", "--fleet", str(fleet_file), "--ledger", str(ledger), "--hour", "2026-11-30-08:00"], env={"COLUMNS": "250"}
    )
    assert done.exit_code == 0, done.output
    assert ledger.is_dir() and any(ledger.iterdir()), "the sweep wrote nothing under --ledger"
