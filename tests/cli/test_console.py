"""The ``faultsense`` console script's entry point (faultsense_pipelines.console)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from faultsense_pipelines import console


class _InterruptingFinder:
    """An import finder that behaves like a Ctrl-C arriving while the CLI module loads."""

    def find_spec(self, name, path=None, target=None):
        if name == "faultsense_pipelines.cli":
            raise KeyboardInterrupt
        return None


def test_a_ctrl_c_while_the_command_loads_is_one_line_and_exit_130(monkeypatch, capsys):
    monkeypatch.delitem(sys.modules, "faultsense_pipelines.cli", raising=False)
    monkeypatch.setattr(sys, "meta_path", [_InterruptingFinder(), *sys.meta_path])
    with pytest.raises(SystemExit) as stopped:
        console.main()
    assert stopped.value.code == 130
    assert capsys.readouterr().err.splitlines() == ["error: interrupted while starting; nothing was run"]


@pytest.mark.integration  # the installed script in a subprocess
def test_the_installed_console_script_runs_the_command():
    exe = Path(sys.executable).with_name("faultsense")
    done = subprocess.run(
        [str(exe), "plan", "--gpus", "8", "--probe-size", "4", "--json"], capture_output=True, text=True, check=True
    )
    assert '"probes": [' in done.stdout and done.stderr == ""


def test_faultsense_ui_runs_dagster_dev_with_plain_logs_off_a_terminal_and_keeps_pythonwarnings() -> None:
    from faultsense_pipelines.cli.ui_cmd import SUPERSEDED_WARNING, dagster_dev_argv, dev_environment

    assert dagster_dev_argv("127.0.0.1", 3000, tty=False)[-2:] == ["--log-format", "json"]
    assert dagster_dev_argv("127.0.0.1", 3000, tty=True)[-2:] == ["--log-format", "colored"]
    assert dev_environment({})["PYTHONWARNINGS"] == SUPERSEDED_WARNING
    assert dev_environment({"PYTHONWARNINGS": "error::DeprecationWarning"})["PYTHONWARNINGS"] == (
        f"error::DeprecationWarning,{SUPERSEDED_WARNING}"
    )
