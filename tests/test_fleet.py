"""The fleet file: the issue's example parses; every malformed file gets one error naming the field."""

from __future__ import annotations

import copy
import inspect
import re
from pathlib import Path

import pytest

from faultsense_pipelines.fleet import DEFAULT_FLEET_PATH, EXECUTORS, FleetError, load_fleet, parse_fleet
from faultsense_pipelines.probe.executors.vllm_http import VllmExecutor
from faultsense_pipelines.replica.faults import GpuFault, LinkFault
from faultsense_pipelines.replica.vocabulary import ExecutorKind
from faultsense_pipelines.resources.executors import executor_options
from faultsense_pipelines.sim.simulator import DEFAULT_BASE_MS

ISSUE_EXAMPLE = """
ledger: .faultsense/ledger          # local path or any fsspec / pyarrow filesystem URI
replicas:
  - name: sim-64                    # [a-z0-9_-]+, unique
    gpus: 64
    probe_size: 8
    executor: simulated
    simulated: {faults: [{gpu: 17, slowdown: 1.5}, {link: [3, 40], slowdown: 2.0}], noise_sigma: 0.02, seed: 1}
  - name: local-8
    gpus: 8
    probe_size: 4
    executor: local                 # real MoE probes on local worker processes
    local: {inject: [{gpu: 2, slowdown: 3.0}]}
  - name: prod-a
    gpus: 64
    probe_size: 8
    executor: vllm
    vllm: {url: "https://probe.prod-a.example:8000", api_key_env: PROD_A_KEY}
"""

BASE = {
    "ledger": "/tmp/ledger",
    "replicas": [
        {"name": "a", "gpus": 8, "probe_size": 4, "executor": "simulated"},
        {"name": "b", "gpus": 8, "probe_size": 4, "executor": "simulated"},
    ],
}


def with_second(**changes) -> dict:
    data = copy.deepcopy(BASE)
    data["replicas"][1].update(changes)
    return data


def test_the_issue_example_fleet_parses_with_every_section(tmp_path: Path) -> None:
    path = tmp_path / "fleet.yaml"
    path.write_text(ISSUE_EXAMPLE)
    fleet = load_fleet(path)
    assert fleet.names == ["sim-64", "local-8", "prod-a"]
    assert fleet.shapes == ["n64-k8", "n8-k4"]
    assert fleet.replica("prod-a").vllm.api_key_env == "PROD_A_KEY"
    # the executors get the objects the file was validated into, not dicts to parse again
    assert executor_options(fleet.replica("local-8")) == {"inject": [GpuFault(2, 3.0)]}
    assert executor_options(fleet.replica("sim-64"))["faults"] == [GpuFault(17, 1.5), LinkFault((3, 40), 2.0)]
    assert executor_options(fleet.replica("sim-64"))["base_ms"] == DEFAULT_BASE_MS  # one default: the simulator's
    # a vllm section without timeout_s or retries leaves them to the executor (one default each)
    options = executor_options(fleet.replica("prod-a"))
    assert "timeout_s" not in options and "retries" not in options
    defaults = inspect.signature(VllmExecutor).parameters
    assert (defaults["timeout_s"].default, defaults["retries"].default) == (30.0, 2)


def test_the_shipped_default_fleet_has_a_local_straggler_and_paper_scale_simulated_replicas() -> None:
    fleet = load_fleet(DEFAULT_FLEET_PATH)
    local = [r for r in fleet.replicas if r.executor == "local"]
    assert [(r.gpus, r.probe_size) for r in local] == [(8, 4)]
    assert [i.to_dict() for i in local[0].local.inject] == [{"gpu": 2, "slowdown": 3.0}]
    simulated = [r for r in fleet.replicas if r.executor == "simulated"]
    assert len(simulated) >= 2 and all(r.gpus >= 25 for r in simulated)
    assert any(r.simulated.faults for r in simulated) and any(not r.simulated.faults for r in simulated)


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"probe_size": 9}, "replicas[1].probe_size: must be < gpus (got 9 > 8)"),
        # k = n: a cover of one probe, which passes by comparison with itself
        (
            {"probe_size": 8},
            "replicas[1].probe_size: must be < gpus (got 8 = gpus): a cover of one probe holding every GPU cannot be judged",
        ),
        # L(4096, 2) = 4096 * 4095 / 2 = 8,386,560 probes: refused at load, not after minutes of planning
        (
            {"gpus": 4096, "probe_size": 2},
            "replicas[1].probe_size: a cover of gpus=4096 with probe_size=2 needs at least 8,386,560 probes",
        ),
        ({"name": "../escape"}, "replicas[1].name: must be 1-64 of a-z, 0-9"),
        ({"name": "Prod_A"}, "replicas[1].name:"),
        ({"name": "a"}, "replicas[1].name: 'a' is already the name of replicas[0]"),
        ({"gpus": 1}, "replicas[1].gpus:"),
        ({"executor": "tpu"}, "replicas[1].executor:"),
        ({"executor": "vllm"}, "replicas[1].vllm: required when executor is 'vllm'"),
        ({"local": {"inject": []}}, "replicas[1].local: given, but executor is 'simulated'"),
        (
            {"simulated": {"faults": [{"gpu": 8, "slowdown": 2.0}]}},
            "replicas[1].simulated.faults[0].gpu: GPU id 8 is outside 0..7",
        ),
        (
            {"simulated": {"faults": [{"gpu": 1, "slowdown": 0}]}},
            "replicas[1].simulated.faults[0].slowdown: must be a finite number >= 1",
        ),
        (
            {"simulated": {"faults": [{"gpu": 1, "slowdown": 0.5}]}},
            "replicas[1].simulated.faults[0].slowdown: must be a finite number >= 1 (a gray failure slows down), got 0.5",
        ),
        ({"simulated": {"faults": [{"gpu": 1, "slowdown": float("nan")}]}}, "replicas[1].simulated.faults[0].slowdown:"),
        (
            {"simulated": {"faults": [{"link": [3, 3], "slowdown": 2.0}]}},
            "replicas[1].simulated.faults[0].link: a link joins two different GPUs",
        ),
        (
            {"simulated": {"faults": [{"gpu": 1, "link": [2, 3], "slowdown": 2.0}]}},
            "replicas[1].simulated.faults[0]: give exactly one of gpu, link, nic, nvswitch or switch",
        ),
        ({"alpha": 0.9}, "replicas[1].alpha: must be a finite number > 1"),
        ({"min_slowdown": 1000.0}, "replicas[1].min_slowdown: must be a finite number in (1, 100], got 1000.0"),
        ({"phase2": {"alpha": 0.0}}, "replicas[1].phase2.alpha: Input should be greater than or equal to 0.000001"),
        ({"phase2": {"alpha": 5e-324}}, "replicas[1].phase2.alpha: Input should be greater than or equal to 0.000001"),
        ({"phase2": {"alpha": 0.6}}, "replicas[1].phase2.alpha: Input should be less than or equal to 0.5"),
        ({"phase2": {"budget": -1}}, "replicas[1].phase2.budget: Input should be greater than or equal to 0"),
        ({"phase2": {"budget": 1.5}}, "replicas[1].phase2.budget: Input should be a valid integer"),
        ({"phase2": {"alfa": 0.01}}, "replicas[1].phase2.alfa: Extra inputs are not permitted"),
        ({"repeats": 0}, "replicas[1].repeats:"),
        ({"colour": "red"}, "replicas[1].colour: Extra inputs are not permitted"),
        ({"executor": "vllm", "vllm": {"url": "probe:8000"}}, "replicas[1].vllm.url: must be an http:// or https:// URL"),
        (
            {"executor": "vllm", "vllm": {"url": "http://h:1", "api_key_env": "sk-live 123"}},
            "replicas[1].vllm.api_key_env: must be the name of an environment variable",
        ),
        (
            {"executor": "local", "local": {"inject": [{"gpu": 2, "slowdown": 0.5}]}},
            "replicas[1].local.inject[0].slowdown: must be a finite number >= 1",
        ),
        (
            {"executor": "local", "local": {"inject": [{"gpu": 2, "delay_ms": 1.0}]}},
            "replicas[1].local.inject[0]: give {gpu, slowdown}, {link: [a, b], delay_ms} or {nic | nvswitch | switch: id, delay_ms}",
        ),
        (
            {"executor": "local", "local": {"inject": [{"gpu": 2, "nic": 0, "slowdown": 2.0}]}},
            "replicas[1].local.inject[0]: give {gpu, slowdown}, {link: [a, b], delay_ms} or {nic | nvswitch | switch: id, delay_ms}",
        ),
    ],
)
def test_a_malformed_replica_gets_one_error_naming_the_field(changes: dict, expected: str) -> None:
    with pytest.raises(FleetError) as err:
        parse_fleet(with_second(**changes), source="fleet.yaml")
    message = str(err.value)
    assert message.startswith(f"fleet.yaml: {expected}"), message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        ({**BASE, "ledger": "nosuchfs://bucket/ledger"}, "ledger: unknown filesystem scheme 'nosuchfs'"),
        ({**BASE, "ledger": ""}, "ledger:"),
        ({"ledger": "/x", "replicas": []}, "replicas:"),
        ([1, 2], "the fleet must be a mapping with 'ledger' and 'replicas', got a list"),
        ("sim-8", "the fleet must be a mapping with 'ledger' and 'replicas', got a string"),
        (None, "the fleet file is empty; it needs 'ledger' and 'replicas'"),
    ],
)
def test_a_malformed_fleet_gets_one_error_naming_the_field(data: object, expected: str) -> None:
    with pytest.raises(FleetError, match=None) as err:
        parse_fleet(data, source="f.yaml")
    assert str(err.value).startswith(f"f.yaml: {expected}"), str(err.value)


@pytest.mark.parametrize("text", ["", "# replicas go here\n", "\n\n"])
def test_an_empty_fleet_file_says_so(tmp_path: Path, text: str) -> None:
    empty = tmp_path / "empty.yaml"
    empty.write_text(text)
    with pytest.raises(FleetError, match=r"empty.yaml: the fleet file is empty"):
        load_fleet(empty)


def test_files_that_are_missing_or_not_yaml_are_named_in_the_error(tmp_path: Path) -> None:
    with pytest.raises(FleetError, match="cannot read fleet file"):
        load_fleet(tmp_path / "absent.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("ledger: x\nreplicas: [\n  - {name: a\n")
    with pytest.raises(FleetError, match=r"bad.yaml: line \d+: not valid YAML"):
        load_fleet(bad)


def test_remote_ledger_uris_are_accepted_and_can_be_overridden() -> None:
    fleet = parse_fleet({**BASE, "ledger": "s3://bucket/faultsense"})
    assert fleet.ledger == "s3://bucket/faultsense"
    assert fleet.with_ledger("memory://ledger").ledger == "memory://ledger"
    with pytest.raises(KeyError, match="unknown replica 'zz'; the fleet has a, b"):
        fleet.replica("zz")


@pytest.mark.parametrize(
    "changes, expected",
    [
        (
            {"executor": "vllm", "vllm": {"url": "http://alice:pw123@127.0.0.1:9"}},
            "replicas[1].vllm.url: credentials in the URL are not allowed; put the key in the environment variable "
            "named by api_key_env, got 'http://alice:***@127.0.0.1:9'",
        ),
        (
            {"executor": "vllm", "vllm": {"url": "https://pw123@probe:8000/v1"}},
            "replicas[1].vllm.url: credentials in the URL are not allowed",
        ),
        (
            {"executor": "vllm", "vllm": {"url": "ftp://alice:pw123@probe"}},
            "replicas[1].vllm.url: credentials in the URL are not allowed",
        ),
        (
            {"executor": "vllm", "vllm": {"url": "http://h:1", "api_key_env": "pw123 live"}},
            "replicas[1].vllm.api_key_env: must be the name of an environment variable",
        ),
    ],
)
def test_a_fleet_error_never_echoes_a_secret(changes: dict, expected: str) -> None:
    with pytest.raises(FleetError) as err:
        parse_fleet(with_second(**changes), source="fleet.yaml")
    message = str(err.value)
    assert message.startswith(f"fleet.yaml: {expected}"), message
    assert "pw123" not in message


@pytest.mark.parametrize("ledger", ["nosuchfs://key:pw123@bucket/ledger", " s3://key:pw123@bucket/ledger"])
def test_a_bad_ledger_uri_error_redacts_its_password(ledger: str) -> None:
    with pytest.raises(FleetError) as err:
        parse_fleet({**BASE, "ledger": ledger}, source="fleet.yaml")
    assert str(err.value).startswith("fleet.yaml: ledger: ") and "key:***@bucket" in str(err.value), str(err.value)
    assert "pw123" not in str(err.value)


@pytest.mark.parametrize(
    ("faults", "expected"),
    [
        ([{"gpu": 3, "slowdown": 2.0}, {"gpu": 3, "slowdown": 2.0}], "faults[1] repeats gpu 3"),
        ([{"gpu": 3, "slowdown": 2.0}, {"gpu": 1, "slowdown": 1.5}, {"gpu": 3, "slowdown": 3.0}], "faults[2] repeats gpu 3"),
        ([{"link": [2, 5], "slowdown": 2.0}, {"link": [2, 5], "slowdown": 1.5}], "faults[1] repeats link (2, 5)"),
        ([{"link": [2, 5], "slowdown": 2.0}, {"link": [5, 2], "slowdown": 2.0}], "faults[1] repeats link (2, 5)"),
    ],
)
def test_a_simulated_fault_listed_twice_is_refused_when_the_fleet_loads_in_the_scenario_words(
    faults: list, expected: str
) -> None:
    from faultsense_pipelines.sim.scenario import parse_scenario

    with pytest.raises(FleetError) as err:
        parse_fleet(with_second(simulated={"faults": faults}), source="fleet.yaml")
    assert str(err.value) == f"fleet.yaml: replicas[1].simulated: {expected}"
    # `faultsense simulate` says the same of the same faults
    with pytest.raises(ValueError, match=rf"^{re.escape(expected)}$"):
        parse_scenario({"gpus": 8, "probe_size": 4, "faults": faults})


def test_a_gpu_fault_and_a_link_fault_on_the_same_gpu_are_not_repeats() -> None:
    fleet = parse_fleet(with_second(simulated={"faults": [{"gpu": 3, "slowdown": 2.0}, {"link": [3, 4], "slowdown": 1.5}]}))
    assert len(fleet.replica("b").simulated.faults) == 2


@pytest.mark.parametrize(
    ("changes", "expected"),
    [
        ({"gpus": 0}, "replicas[1].gpus: Input should be greater than or equal to 2, got 0"),
        ({"gpus": True}, "replicas[1].gpus: Input should be a valid integer, got True (a boolean)"),
        ({"gpus": 8.0}, "replicas[1].gpus: Input should be a valid integer, got 8.0"),
        ({"repeats": False}, "replicas[1].repeats: Input should be a valid integer, got False (a boolean)"),
        ({"alpha": True}, "replicas[1].alpha: Input should be a valid number, got True (a boolean)"),
        ({"executor": "magic"}, "replicas[1].executor: Input should be 'simulated', 'local', 'ray' or 'vllm', got 'magic'"),
        (
            {"simulated": {"noise_sigma": float("nan")}},
            "replicas[1].simulated.noise_sigma: must be a finite number (NaN and infinity are not allowed), got nan",
        ),
        (
            {"simulated": {"base_ms": float("inf")}},
            "replicas[1].simulated.base_ms: must be a finite number (NaN and infinity are not allowed), got inf",
        ),
        (
            {"simulated": {"noise_sigma": 1.5}},
            "replicas[1].simulated.noise_sigma: Input should be less than or equal to 1, got 1.5",
        ),
        (
            {"simulated": {"faults": [{"gpu": 1, "slowdown": 1e307}]}},
            "replicas[1].simulated.faults[0].slowdown: must be <= 1000 (slower is a fail-stop, not a gray failure), got 1e+307",
        ),
        (
            {"simulated": {"base_ms": 1e300}},
            "replicas[1].simulated.base_ms: Input should be less than or equal to 60000, got 1e+300",
        ),
        ({"simulated": {"seed": True}}, "replicas[1].simulated.seed: Input should be a valid integer, got True (a boolean)"),
        (
            {"simulated": {"faults": [{"gpu": True, "slowdown": 2.0}]}},
            "replicas[1].simulated.faults[0].gpu: Input should be a valid integer, got True (a boolean)",
        ),
        (
            {"simulated": {"faults": [{"gpu": 1, "slowdown": True}]}},
            "replicas[1].simulated.faults[0].slowdown: Input should be a valid number, got True (a boolean)",
        ),
        (
            {"simulated": {"faults": [{"link": [1, True], "slowdown": 2.0}]}},
            "replicas[1].simulated.faults[0].link[1]: Input should be a valid integer, got True (a boolean)",
        ),
        (
            {"executor": "vllm", "vllm": {"url": "http://h:1", "retries": 1.5}},
            "replicas[1].vllm.retries: Input should be a valid integer, got 1.5",
        ),
        (
            {"executor": "vllm", "vllm": {"url": "http://h:1", "check_routing": "yes"}},
            "replicas[1].vllm.check_routing: Input should be a valid boolean, got 'yes'",
        ),
    ],
)
def test_a_bad_value_is_echoed_in_the_error_and_booleans_nan_and_infinity_are_refused(changes: dict, expected: str) -> None:
    with pytest.raises(FleetError) as err:
        parse_fleet(with_second(**changes), source="fleet.yaml")
    assert str(err.value) == f"fleet.yaml: {expected}"


@pytest.mark.parametrize("data", [{"replicas": BASE["replicas"]}, {**BASE, "ledger": None}], ids=["absent", "empty"])
def test_the_ledger_may_be_left_out_of_the_file_for_ledger_or_the_variable_to_give(data: dict) -> None:
    # `ledger:` absent, or present with no value: --ledger or $FAULTSENSE_LEDGER gives it
    # (faultsense_pipelines.ledger.location; tests/test_ledger_location.py)
    fleet = parse_fleet(data, source="fleet.yaml")
    assert fleet.ledger is None
    assert fleet.with_ledger("memory://ledger").ledger == "memory://ledger"


def test_the_value_of_api_key_env_is_never_echoed_even_when_it_is_not_a_string() -> None:
    with pytest.raises(FleetError) as err:
        parse_fleet(with_second(executor="vllm", vllm={"url": "http://h:1", "api_key_env": 9876543210}), source="fleet.yaml")
    assert str(err.value).startswith("fleet.yaml: replicas[1].vllm.api_key_env: Input should be a valid string")
    assert "9876543210" not in str(err.value)


def test_a_fleet_file_that_is_not_utf8_is_named_in_the_error(tmp_path: Path) -> None:
    path = tmp_path / "binary.yaml"
    path.write_bytes(b" \xff\xfe garbage\n")
    with pytest.raises(FleetError) as err:
        load_fleet(path)
    assert str(err.value) == f"{path}: not a UTF-8 text file (byte 0xff at offset 1)"


@pytest.mark.parametrize("path", ["/dev/zero", "/tmp"])
def test_a_fleet_path_that_is_not_a_regular_file_is_refused_before_reading(path: str) -> None:
    """/dev/zero used to be read until memory ran out."""
    with pytest.raises(FleetError) as err:
        load_fleet(path)
    assert str(err.value) == f"{path}: not a regular file"


def test_a_fleet_file_larger_than_any_fleet_is_refused(tmp_path: Path, monkeypatch) -> None:
    from faultsense_pipelines.fleet import file as fleet

    path = tmp_path / "huge.yaml"
    path.write_text("replicas: []\n" + "#" * 2048)
    monkeypatch.setattr(fleet, "MAX_FLEET_BYTES", 1024)
    with pytest.raises(FleetError) as err:
        load_fleet(path)
    assert str(err.value) == f"{path}: larger than 1,024 bytes: not an input file"


def test_the_executor_kinds_come_from_one_registry() -> None:
    from faultsense_pipelines.probe.executors import EXECUTOR_BUILDERS, EXECUTOR_KINDS

    assert set(EXECUTOR_BUILDERS) == set(ExecutorKind)
    assert EXECUTORS == EXECUTOR_KINDS == ("simulated", "local", "ray", "vllm")
    replica = parse_fleet(with_second()).replicas[1]
    assert replica.executor is ExecutorKind.SIMULATED and replica.executor == "simulated"
    assert replica.model_dump(mode="json")["executor"] == "simulated"


def test_a_replicas_phase2_section_carries_the_error_and_probe_budgets() -> None:
    replica = parse_fleet(with_second(phase2={"alpha": 0.05, "budget": 40})).replicas[1]
    assert (replica.phase2.alpha, replica.phase2.budget) == (0.05, 40)
    assert parse_fleet(with_second()).replicas[1].phase2 is None


def test_since_written_as_a_bare_yaml_date_is_read_as_written(tmp_path: Path) -> None:
    # YAML would read `since: 2026-12-01` as a date, and `2026-13-01` would fail with no field
    # named: the fleet file reads dates as their text, and `since` checks them itself
    path = tmp_path / "fleet.yaml"
    replica = "  - {name: a, gpus: 8, probe_size: 4, executor: simulated}\n"
    path.write_text(f"since: 2026-12-01\nledger: {tmp_path / 'l'}\nreplicas:\n{replica}")
    assert load_fleet(path).since == "2026-12-01-00:00"
    path.write_text(f"since: 2026-13-01\nledger: {tmp_path / 'l'}\nreplicas:\n{replica}")
    with pytest.raises(FleetError, match=r"since: must be a UTC day YYYY-MM-DD or hour YYYY-MM-DD-HH:00 .*got '2026-13-01'$"):
        load_fleet(path)


def test_yaml_exponent_numbers_are_numbers(tmp_path: Path) -> None:
    # YAML 1.1 (PyYAML) reads 1e-3 as the text '1e-3'; the fleet file reads it as YAML 1.2
    # does, a number, with and without a dot
    text = (
        f"ledger: {tmp_path / 'ledger'}\n"
        "replicas:\n"
        "  - {name: a, gpus: 8, probe_size: 4, executor: simulated, phase2: {alpha: 1e-3}, min_slowdown: 15e-1}\n"
        "  - {name: b, gpus: 8, probe_size: 4, executor: simulated, phase2: {alpha: 2.5E-2}}\n"
    )
    path = tmp_path / "fleet.yaml"
    path.write_text(text)
    a, b = load_fleet(path).replicas
    assert (a.phase2.alpha, a.min_slowdown, b.phase2.alpha) == (0.001, 1.5, 0.025)
