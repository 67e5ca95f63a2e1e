"""Hostile and careless inputs through the real ``faultsense`` command (typer's CliRunner).

Every case must end the same way: exit 2, nothing on stdout, exactly one line on stderr that
starts with ``error:``, names the bad field, is at most ``MAX_ERROR_CHARS`` long and never
carries a secret -- never a traceback. The inputs are the ones a break-it pass found
(issue 17 item 5): a 5000-digit seed, duplicate keys, an alias bomb, a 200 KB value, a
ledger path with a leading space, counters >= 2^63, ...
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.cli.errors import MAX_ERROR_CHARS
from faultsense_pipelines.fleet import MAX_FLEET_BYTES, MAX_REPLICAS
from faultsense_pipelines.redaction import forget_secrets
from tests.hypothesis_profiles import examples

runner = CliRunner()

HUGE = 200_000  # characters of a "200 KB value"
SECRET = "sk-hostile-0123456789abcdef"

#: One valid simulated replica, as YAML lines under ``replicas:``; cases replace a line.
REPLICA = ["  - name: sim-a", "    gpus: 8", "    probe_size: 4", "    executor: simulated", "    simulated: {seed: 1}"]

ALIAS_BOMB = "\n".join(
    [
        'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]',
        *(f"{c}: &{c} [{', '.join([f'*{p}'] * 9)}]" for p, c in zip("abcdefgh", "bcdefghi", strict=True)),
        "replicas: *i",
    ]
)


def _fleet(*, ledger: str | None = "{ledger}", replica: list[str] = REPLICA, head: str = "") -> str:
    lines = [head] if head else []
    if ledger is not None:
        lines.append(f"ledger: {ledger}")
    return "\n".join([*lines, "replicas:", *replica]) + "\n"


def _with(line: int, text: str) -> list[str]:
    out = list(REPLICA)
    out[line] = text
    return out


def _many_replicas(n: int) -> str:
    rows = [f"  - {{name: r{i}, gpus: 8, probe_size: 4, executor: simulated}}" for i in range(n)]
    return "ledger: {ledger}\nreplicas:\n" + "\n".join(rows) + "\n"


# (case id, fleet file text ({ledger} is the test's ledger path), words the error line must hold)
FLEETS = [
    ("duplicate-key", _fleet(replica=[*REPLICA[:2], "    gpus: 16", *REPLICA[2:]]), ["line 5", "duplicate key 'gpus'"]),
    ("duplicate-top-key", _fleet(head="replicas: []"), ["duplicate key 'replicas'"]),
    ("alias-bomb", ALIAS_BOMB, ["YAML aliases"]),
    (
        "alias",
        "ledger: {ledger}\nr: &r {name: a, gpus: 8, probe_size: 4, executor: simulated}\nreplicas: [*r]\n",
        ["YAML aliases"],
    ),
    ("merge-key", _fleet(head="base: &b {gpus: 8}", replica=["  - <<: *b", *REPLICA[:1]]), ["YAML aliases"]),
    ("5000-digit-gpus", _fleet(replica=_with(1, "    gpus: " + "9" * 5000)), ["replicas[0].gpus", "5000-digit integer"]),
    ("seed-2^32", _fleet(replica=_with(4, f"    simulated: {{seed: {2**32}}}")), ["replicas[0].simulated.seed", "0..4294967295"]),
    ("negative-seed", _fleet(replica=_with(4, "    simulated: {seed: -1}")), ["replicas[0].simulated.seed"]),
    # YAML 1.2 exponent forms are numbers, so the field's own range is what refuses them
    ("gpus-1e9", _fleet(replica=_with(1, "    gpus: 1e9")), ["replicas[0].gpus", "1000000000.0"]),
    ("error-budget-1e-9", _fleet(replica=_with(4, "    phase2: {alpha: 1e-9}")), ["replicas[0].phase2.alpha", "0.000001"]),
    ("200kb-name", _fleet(replica=_with(0, "  - name: " + "A" * HUGE)), ["replicas[0].name: at most 4096 characters"]),
    ("3000-character-name", _fleet(replica=_with(0, "  - name: " + "A" * 3000)), ["replicas[0].name: must be 1-64", "…"]),
    (
        "200kb-model",
        _fleet(replica=_with(4, "    simulated: {model: " + "M" * HUGE + "}")),
        ["replicas[0].simulated.model: at most 4096 characters, got 200,000"],
    ),
    (
        "200kb-key",
        _fleet(replica=_with(4, "    simulated:\n      ? " + "K" * HUGE + "\n      : 1")),
        ["replicas[0].simulated key: at most 4096 characters"],
    ),
    (
        "ledger-leading-space",
        _fleet(ledger="' /tmp/x'"),
        ["ledger: must be a path or URI without leading or trailing whitespace"],
    ),
    ("ledger-escape-sequence", _fleet(ledger='"/tmp/x\\e[31m"'), ["ledger: must be a path or URI without control characters"]),
    ("ledger-nul", _fleet(ledger='"/tmp/x\\0y"'), ["ledger: must be a path or URI without control characters"]),
    (
        "too-many-replicas",
        _many_replicas(MAX_REPLICAS + 1),
        [f"replicas: at most {MAX_REPLICAS} replicas", str(MAX_REPLICAS + 1)],
    ),
    ("too-large", _fleet() + "#" * MAX_FLEET_BYTES, ["larger than 524,288 bytes"]),
    ("nested-too-deep", "replicas: " + "[" * 100_000, ["not valid YAML"]),
    ("python-tag", _fleet(replica=_with(1, "    gpus: !!python/object/apply:os.system [id]")), ["python/object"]),
    ("float-gpus", _fleet(replica=_with(1, "    gpus: 1e999")), ["replicas[0].gpus"]),
    # found by the junk-file property below: PyYAML's constructors raise IndexError, KeyError, ValueError
    ("empty-int-tag", _fleet(replica=_with(1, "    gpus: !!int ")), ["line 4", "the value '' cannot be read as int"]),
    ("empty-bool-tag", _fleet(replica=_with(1, "    gpus: !!bool ")), ["line 4", "cannot be read as bool"]),
    # a date is read as its text (textfile.StrictLoader), so the field that gets it names itself
    ("bad-date", _fleet(replica=_with(1, "    gpus: 2020-99-99")), ["replicas[0].gpus", "'2020-99-99'"]),
    (
        "200kb-url-with-password",
        _fleet(replica=[*REPLICA[:3], "    executor: vllm", f"    vllm: {{url: 'http://u:{SECRET}@" + "h" * HUGE + "'}"]),
        ["replicas[0].vllm.url: at most 4096 characters"],
    ),
    (
        "url-with-password",
        _fleet(replica=[*REPLICA[:3], "    executor: vllm", f"    vllm: {{url: 'http://u:{SECRET}@h:8000'}}"]),
        ["replicas[0].vllm.url", "credentials in the URL", "u:***@h:8000"],
    ),
    (
        "api-key-in-place-of-its-variable",
        _fleet(replica=[*REPLICA[:3], "    executor: vllm", f"    vllm: {{url: 'http://h:8000', api_key_env: '{SECRET}'}}"]),
        ["replicas[0].vllm.api_key_env", "not shown"],
    ),
    (
        "api-key-variable-unset",  # refused before any run, not after the replicas before it
        _fleet(replica=[*REPLICA[:3], "    executor: vllm", "    vllm: {url: 'http://h:8000', api_key_env: FS_HOSTILE_UNSET}"]),
        ["replicas[0].vllm.api_key_env: environment variable FS_HOSTILE_UNSET (the API key) is not set", "nothing was swept"],
    ),
]

# (case id, scenario file text, words the error line must hold)
SCENARIOS = [
    ("5000-digit-seed", '{"gpus": 8, "probe_size": 4, "faults": [], "seed": ' + "9" * 5000 + "}", ["seed", "5000-digit integer"]),
    (
        "seed-2^32",
        json.dumps({"gpus": 8, "probe_size": 4, "faults": [], "seed": 2**32}),
        ["seed must be an integer in 0..4294967295"],
    ),
    ("duplicate-key", '{"gpus": 8, "gpus": 16, "probe_size": 4, "faults": []}', ["duplicate key 'gpus'"]),
    (
        "nested-duplicate-key",
        '{"gpus": 8, "probe_size": 4, "faults": [], "noise": {"sigma": 0, "sigma": 1}}',
        ["duplicate key 'sigma'"],
    ),
    ("100-digit-gpus", '{"gpus": ' + "9" * 100 + ', "probe_size": 4, "faults": []}', ["gpus", "100-digit integer"]),
    ("5000-digit-probe-size", '{"gpus": 8, "probe_size": ' + "9" * 5000 + ', "faults": []}', ["probe_size"]),
    ("200kb-gpus", json.dumps({"gpus": "G" * HUGE, "probe_size": 4, "faults": []}), ["gpus must be an integer", "…"]),
    ("200kb-key", json.dumps({"gpus": 8, "probe_size": 4, "faults": [], "K" * HUGE: 1}), ["unknown field", "…"]),
    ("200kb-slowdown", json.dumps({"gpus": 8, "probe_size": 4, "faults": [{"gpu": 1, "slowdown": "S" * HUGE}]}), ["faults[0]"]),
    ("nested-too-deep", '{"gpus": ' + "[" * 100_000, ["malformed JSON: nested too deeply"]),
    ("nan-sigma", '{"gpus": 8, "probe_size": 4, "faults": [], "noise": {"sigma": NaN}}', ["noise.sigma"]),
    ("not-json", "gpus: 8\n", ["malformed JSON at line 1 column 1"]),
]


def _one_error_line(result, *words: str) -> str:
    """The single stderr line of a refused command, after the common checks."""
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code == 2, result.output[-2000:]
    assert result.stdout == ""
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr[-2000:]
    line = lines[0]
    assert line.startswith("error: ") and len(line) <= MAX_ERROR_CHARS, line[:300]
    assert "Traceback" not in line and SECRET not in line
    for word in words:
        assert word in line, line
    return line


@pytest.fixture(autouse=True)
def _no_registered_secrets():
    yield
    forget_secrets()


@pytest.mark.parametrize(("text", "words"), [c[1:] for c in FLEETS], ids=[c[0] for c in FLEETS])
def test_a_hostile_fleet_file_is_one_line_naming_the_field_and_nothing_is_written(tmp_path: Path, text: str, words) -> None:
    fleet, ledger = tmp_path / "fleet.yaml", tmp_path / "ledger"
    fleet.write_text(text.replace("{ledger}", str(ledger)))
    result = runner.invoke(app, ["sweep", "--fleet", str(fleet), "--hour", "2026-11-30-08:00"])
    line = _one_error_line(result, *words)
    assert str(fleet) in line  # the file is named too
    assert not ledger.exists()


def test_a_fleet_error_never_shows_a_value_longer_than_80_characters(tmp_path: Path) -> None:
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(_fleet(ledger="/tmp/l", replica=_with(0, "  - name: " + "A" * 3000)))
    line = _one_error_line(runner.invoke(app, ["sweep", "--fleet", str(fleet)]), "replicas[0].name")
    shown = line[line.index("got ") + 4 :]
    assert shown == "'" + "A" * 78 + "…", shown  # repr quote + 78 characters + the ellipsis: 80


@pytest.mark.parametrize("password", ["", f"u:{SECRET}@"])
def test_a_3000_character_url_is_shown_at_80_characters(tmp_path: Path, password: str) -> None:
    fleet = tmp_path / "fleet.yaml"
    url = f"http://{password}h:8000/" + " x" * 1500  # not a URL (spaces), with and without a password
    fleet.write_text(_fleet(ledger="/tmp/l", replica=[*REPLICA[:3], "    executor: vllm", f"    vllm: {{url: '{url}'}}"]))
    line = _one_error_line(runner.invoke(app, ["sweep", "--fleet", str(fleet)]), "replicas[0].vllm.url")
    shown = line[line.index("got ") + 4 :]
    assert len(shown) == 80 and shown.endswith("…") and shown.startswith(f"'http://{password and 'u:***@'}h:8000/"), shown


@pytest.mark.parametrize(("text", "words"), [c[1:] for c in SCENARIOS], ids=[c[0] for c in SCENARIOS])
def test_a_hostile_scenario_file_is_one_line_naming_the_field(tmp_path: Path, text: str, words) -> None:
    scenario = tmp_path / "scenario.json"
    scenario.write_text(text)
    _one_error_line(runner.invoke(app, ["simulate", "--scenario", str(scenario), "--json"]), *words)


LONG = "L" * HUGE


OPTIONS = [
    (
        "ledger-leading-space",
        ["sweep", "--ledger", " /tmp/x"],
        {},
        ["--ledger: must be a path or URI without leading or trailing"],
    ),
    (
        "ledger-trailing-space",
        ["sweep", "--ledger", "/tmp/x "],
        {},
        ["--ledger: must be a path or URI without leading or trailing"],
    ),
    ("ledger-newline", ["sweep", "--ledger", "/tmp/x\ny"], {}, ["--ledger: must be a path or URI without control characters"]),
    ("ledger-200kb", ["sweep", "--ledger", "/" + LONG], {}, ["--ledger: must be at most 4096 characters"]),
    (
        "ledger-env-space",
        ["sweep"],
        {"FAULTSENSE_LEDGER": " /tmp/x"},
        ["$FAULTSENSE_LEDGER: must be a path or URI without leading"],
    ),
    ("ledger-show-space", ["ledger", "show", "--ledger", " /tmp/x"], {}, ["--ledger: must be a path or URI without leading"]),
    (
        "repeats-not-int",
        ["simulate", "--scenario", "s.json", "--repeats", "abc"],
        {},
        ["--repeats must be an integer in 1..100, got 'abc'"],
    ),
    ("repeats-5000-digits", ["simulate", "--scenario", "s.json", "--repeats", "9" * 5000], {}, ["--repeats"]),
    ("missing-option", ["simulate"], {}, ["Missing option '--scenario'"]),
    ("unknown-option", ["simulate", "--scenari", "s.json"], {}, ["No such option: --scenari"]),
    ("cover-200kb", ["simulate", "--scenario", "s.json", "--cover", LONG], {}, ["--cover must be one of", "…"]),
    ("gpus-5000-digits", ["plan", "--gpus", "9" * 5000, "--probe-size", "4"], {}, ["--gpus must be an integer"]),
    ("sweep-repeats-200kb", ["sweep", "--repeats", LONG], {}, ["--repeats must be an integer in 1..100"]),
    ("hour-200kb", ["sweep", "--hour", LONG], {}, ["--hour"]),
    ("sweep-lock-wait-nan", ["sweep", "--lock-wait", "nan"], {}, ["--lock-wait must be a number of seconds in 0..86400"]),
    *[
        (f"sweep-lock-wait-{i}", ["sweep", "--lock-wait", text], {}, ["--lock-wait must be a number of seconds in 0..86400"])
        for i, text in enumerate(["1_0", "+5", "1e3", "\uff11", "\u0665", "-0", "86401", "5s"])
    ],
    ("sweep-lock-wait-200kb", ["sweep", "--lock-wait", LONG], {}, ["--lock-wait must be a number of seconds", "…"]),
    ("since-200kb", ["ledger", "show", "--ledger", "/tmp/nope", "--since", LONG], {}, ["--since must be a date"]),
    (
        "retain-days-5000-digits",
        ["ledger", "maintain", "--ledger", "/tmp/nope", "--retain-days", "9" * 5000],
        {},
        ["--retain-days"],
    ),
    (
        "probe-out-unwritable",
        ["probe", "build", "--gpus", "8", "--probe-size", "4", "--out", "/proc/nope"],
        {},
        ["--out '/proc/nope': cannot write"],
    ),
    (
        "probe-seed-negative",
        ["probe", "build", "--gpus", "8", "--probe-size", "4", "--out", "o", "--seed", "-1"],
        {},
        ["--seed must be an integer in 0..4294967295"],
    ),
    ("flowpulse-out-is-a-file", ["flowpulse", "simulate", "--out", "s.json"], {}, ["--out 's.json': cannot write"]),
    (
        "flowpulse-buffer-inf",
        ["flowpulse", "simulate", "--out", "o", "--buffer-gib", "inf"],
        {},
        ["--buffer-gib must be a finite number"],
    ),
    (
        "flowpulse-iterations-1e9",
        ["flowpulse", "simulate", "--out", "o", "--iterations", "1000000000"],
        {},
        ["--iterations must be an integer in 1..100000"],
    ),
    (
        "flowpulse-too-many-cells",
        ["flowpulse", "simulate", "--out", "o", "--iterations", "100000", "--leaves", "256"],
        {},
        ["--iterations x --leaves x --spines must be at most 200,000"],
    ),
    (
        "flowpulse-seed-2^32",
        ["flowpulse", "simulate", "--out", "o", "--seed", str(2**32)],
        {},
        ["--seed must be an integer in 0..4294967295"],
    ),
    (
        "minder-steps-1e12",
        ["minder", "train", "--metrics", "m.csv", "--out", "o", "--steps", "999999999999"],
        {},
        ["--steps must be an integer in 1..100000"],
    ),
    (
        "minder-seed-negative",
        ["minder", "train", "--metrics", "m.csv", "--out", "o", "--seed", "-1"],
        {},
        ["--seed must be an integer in 0..4294967295"],
    ),
    ("retain-days-superscript", ["ledger", "maintain", "--ledger", "/tmp/nope", "--retain-days", "²"], {}, ["--retain-days"]),
]


@pytest.mark.parametrize(("args", "env", "words"), [c[1:] for c in OPTIONS], ids=[c[0] for c in OPTIONS])
def test_a_hostile_option_is_one_line_naming_the_option(tmp_path: Path, monkeypatch, args, env, words) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("FAULTSENSE_LEDGER", raising=False)
    (tmp_path / "s.json").write_text('{"gpus": 8, "probe_size": 4, "faults": []}')
    _one_error_line(runner.invoke(app, args, env=env), *words)
    assert list(tmp_path.iterdir()) == [tmp_path / "s.json"]  # nothing written (no ' /tmp/x' under the cwd)


@pytest.mark.parametrize(
    ("option", "suggested"),
    [("--bogus", None), ("--zzz", None), ("--houre", "--hour"), ("--replca", "--replica"), ("--lock", "--lock-wait")],
)
def test_an_unknown_option_suggests_only_a_near_name(option: str, suggested: str | None) -> None:
    """``faultsense sweep --bogus`` suggested ``--hour`` (click's cutoff takes any name 0.6
    alike); a typo or a prefix of a real option still gets its suggestion."""
    line = _one_error_line(runner.invoke(app, ["sweep", option]), f"No such option: {option}")
    if suggested is None:
        assert line == f"error: No such option: {option}", line
    else:
        assert line == f"error: No such option: {option} (Possible options: {suggested})", line


def test_a_registered_secret_in_an_error_line_is_removed(tmp_path: Path, monkeypatch) -> None:
    """A secret loaded earlier in the process (an API key) never reaches an error line, even
    when the user put it into an input: here, the ledger path."""
    from faultsense_pipelines.redaction import register_secret

    register_secret(SECRET)
    monkeypatch.chdir(tmp_path)
    result = runner.invoke(app, ["sweep", "--ledger", f" /tmp/{SECRET}"])
    line = _one_error_line(result, "--ledger")
    assert "/tmp/***" in line


def test_flowpulse_counters_at_2_to_the_63_are_refused_not_wrapped(tmp_path: Path) -> None:
    """2^63 packets read as int64 wrapped to -2^63 and the scan ended with exit 0."""
    from faultsense_pipelines.flowpulse.topology import fat_tree, topology_to_dict

    topology = tmp_path / "topology.json"
    topology.write_text(json.dumps(topology_to_dict(fat_tree(1, 1, 1))))
    counters = tmp_path / "counters.csv"
    counters.write_text(f"iteration,switch,port,peer,direction,bytes,packets\n0,leaf00,up00,spine00,rx,1,{2**63}\n")
    result = runner.invoke(app, ["flowpulse", "scan", "--counters", str(counters), "--topology", str(topology)])
    _one_error_line(result, "column 'packets' must be < 2^53", str(2**63))


def test_a_flowpulse_topology_with_an_alias_or_a_duplicate_key_is_refused(tmp_path: Path) -> None:
    counters = tmp_path / "counters.csv"
    counters.write_text("iteration,switch,port,peer,direction,bytes,packets\n")
    topology = tmp_path / "topology.yaml"
    topology.write_text(ALIAS_BOMB)
    args = ["flowpulse", "scan", "--counters", str(counters), "--topology", str(topology)]
    _one_error_line(runner.invoke(app, args), "topology file", "YAML aliases")
    topology.write_text("switches: []\nswitches: []\n")
    _one_error_line(runner.invoke(app, args), "topology file", "duplicate key 'switches'")


# --- property: random junk files never produce a traceback -------------------------------------

_TOKENS = [
    *("ledger", "replicas", "name", "gpus", "probe_size", "executor", "simulated", "faults", "seed"),
    *("slowdown", "gpu", "link", "noise", "sigma", "vllm", "url", "api_key_env", "inject", "local"),
    *(":", ": ", " ", "\n", "  ", "- ", "{", "}", "[", "]", ",", "&a ", "*a", "<<: ", "? ", "|", ">"),
    *("!!python/object:os.system ", "!!binary ", "!!set ", "!!int ", "!!float ", "%YAML 1.1\n", "---\n"),
    *("'", '"', "\\", "#", "\t", "\x00", "\x1b[31m", "é", "\ufeff", "9" * 30, "-1", "1e999", ".nan"),
    *("NaN", "Infinity", "true", "null", "~", "0x1F", "0o17", "1_000", "1:20", "8", "4", "2.5", "sim-a"),
]
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 20),
    st.sampled_from([2**32, 2**63, 10**30]),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=8),
)
_KEYS = st.sampled_from(["gpus", "probe_size", "faults", "noise", "sigma", "seed", "gpu", "link", "slowdown", "x"])


def _structured(keys: st.SearchStrategy[str]) -> st.SearchStrategy:
    return st.recursive(
        _SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(keys, inner, max_size=5), max_leaves=12
    )


_JUNK = st.one_of(
    st.lists(st.sampled_from(_TOKENS), max_size=60).map(lambda parts: "".join(parts).encode()),
    st.text(max_size=200).map(str.encode),
    st.binary(max_size=200),
    _structured(_KEYS).map(lambda v: json.dumps(v).encode()),
)


def _refused_cleanly_or_ran(result) -> None:
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 2), result.output[-2000:]
    if result.exit_code == 2:
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("error: ") and len(lines[0]) <= MAX_ERROR_CHARS, result.stderr[-2000:]


@pytest.fixture(scope="module")
def junk_dir(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("junk")


@settings(max_examples=examples(60))
@given(data=_JUNK)
def test_a_junk_fleet_file_never_gives_a_traceback(junk_dir: Path, data: bytes) -> None:
    fleet = junk_dir / "fleet.yaml"
    fleet.write_bytes(data)
    # a replica no fleet has: a junk file that happens to be a valid fleet stops before any run
    result = runner.invoke(app, ["sweep", "--fleet", str(fleet), "--replica", "zz-absent", "--hour", "2026-11-30-08:00"])
    _refused_cleanly_or_ran(result)
    assert result.exit_code == 2


@settings(max_examples=examples(80))
@given(data=st.one_of(_JUNK, _structured(_KEYS).map(lambda v: json.dumps({"gpus": 8, "probe_size": 4, "faults": v}).encode())))
def test_a_junk_scenario_file_never_gives_a_traceback(junk_dir: Path, data: bytes) -> None:
    scenario = junk_dir / "scenario.json"
    scenario.write_bytes(data)
    _refused_cleanly_or_ran(runner.invoke(app, ["simulate", "--scenario", str(scenario), "--json"]))


def test_rich_markup_in_a_ledger_row_is_printed_literally(tmp_path: Path) -> None:
    """A row another detector wrote may hold ``[/red]``; rich read it as markup and raised
    MarkupError (a traceback) while printing the ``ledger show`` table."""
    from datetime import UTC, datetime

    from faultsense_pipelines.ledger import FaultRow, LedgerStore
    from faultsense_pipelines.ledger.schema import make_fault_id

    component = "machine:[/red]node-[bold]7"
    row = FaultRow(
        fault_id=make_fault_id("minder", "cluster-a", "2026-11-30-08:00", component),
        detected_at=datetime(2026, 11, 30, 8, 5, tzinfo=UTC),
        sweep_id="s",
        replica="cluster-a",
        detector="minder",
        component_kind="machine",
        component=component,
        status="suspect",
    )
    LedgerStore(str(tmp_path / "ledger")).write_faults([row], day="2026-11-30", batch="minder-x")
    result = runner.invoke(app, ["ledger", "show", "--ledger", str(tmp_path / "ledger"), "--since", "2026-11-01"])
    assert result.exit_code == 0 and result.exception is None, result.output
    assert component in result.stdout
