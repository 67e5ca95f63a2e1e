"""Data-parallel pinning and the served-layout check of the ``vllm`` executor (fast tier).

``StandInDpServer`` is a real loopback HTTP server that *stands in* for vLLM's OpenAI server
with ``D`` data-parallel engines behind one URL; it is not vLLM. It treats the header the way
vLLM's front end does (read in the current vLLM source, ``vllm/entrypoints/generate/base/
serving.py`` ``_get_data_parallel_rank``: ``int()`` of ``X-data-parallel-rank``, ignored when
not an integer; ``vllm/v1/engine/input_processor.py``: HTTP 400 ``data_parallel_rank r is out
of range [0, D)``), records the engine each completion request reached, and with a layout
answers ``/server_info?config_format=json`` like vLLM's dev-mode endpoint (pydantic's JSON
dump of ``VllmConfig``, ``hf_config`` as its ``str``). The engine a probe must reach is written
out below by hand from vLLM's EP rank formula ``ep_rank = dp_rank * TP + tp_rank`` (engine d
of TP 2 holds GPUs 2d and 2d+1), not computed by the executor's code.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from typer.testing import CliRunner

from faultsense_pipelines.cli import app
from faultsense_pipelines.fleet import FleetError, parse_fleet
from faultsense_pipelines.probe.executors.vllm_http import VllmExecutor
from faultsense_pipelines.resources.executors import executor_options
from tests.hostile_server import reply_json

HEADER = "X-data-parallel-rank"

#: FaultSense GPU -> the DP engine holding it, for 8 GPUs served at TP 2 x DP 4 with EP.
ENGINE_OF_GPU = {0: 0, 1: 0, 2: 1, 3: 1, 4: 2, 5: 2, 6: 3, 7: 3}


def olmoe_config_str(experts: int = 8, top_k: int = 2, hidden: int = 64) -> str:
    """What ``str(PretrainedConfig)`` looks like: the class name, a space, its JSON."""
    body = {"architectures": ["OlmoeForCausalLM"], "hidden_size": hidden, "num_experts": experts, "num_experts_per_tok": top_k}
    return "OlmoeConfig " + json.dumps(body, indent=2)


def layout(tp: int = 2, dp: int = 4, ep: bool = True, **extra: object) -> dict:
    """A ``/server_info?config_format=json`` answer (only the keys the executor reads, and a few it does not)."""
    parallel = {
        "pipeline_parallel_size": 1,
        "tensor_parallel_size": tp,
        "prefill_context_parallel_size": 1,
        "data_parallel_size": dp,
        "data_parallel_size_local": dp,
        "enable_expert_parallel": ep,
        "enable_eplb": False,
        "expert_placement_strategy": "linear",
        "data_parallel_external_lb": False,
        "data_parallel_hybrid_lb": False,
    } | extra
    model = {"model": "/srv/probe", "max_model_len": 512, "hf_config": olmoe_config_str()}
    return {"vllm_config": {"parallel_config": parallel, "model_config": model}, "vllm_env": {}, "system_env": {}}


class StandInDpServer:
    """Loopback HTTP server standing in for vLLM's OpenAI server over ``engines`` DP engines."""

    def __init__(self, engines: int, server_info: dict | None = None):
        self.engines = engines
        self.server_info = server_info
        self.reached: list[tuple[str, bool, int | None]] = []  # (header as sent or "", streamed, engine)
        self.gets: list[tuple[str, str | None]] = []
        stand_in = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self):
                stand_in.gets.append((self.path, self.headers.get(HEADER)))
                if self.path == "/v1/models":
                    return reply_json(self, 200, {"object": "list", "data": [{"id": "probe", "root": "/srv/probe"}]})
                if self.path == "/server_info?config_format=json" and stand_in.server_info is not None:
                    return reply_json(self, 200, stand_in.server_info)
                return reply_json(self, 404, {"detail": "Not Found"})

            def do_POST(self):
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                raw = self.headers.get(HEADER)  # headers are case-insensitive, as in Starlette
                try:
                    rank = int(raw) if raw is not None else None
                except ValueError:
                    rank = None  # vLLM ignores a value that is not an integer
                if rank is not None and not 0 <= rank < stand_in.engines:
                    message = f"data_parallel_rank {rank} is out of range [0, {stand_in.engines})."
                    return reply_json(self, 400, {"error": {"message": message, "type": "BadRequestError", "code": 400}})
                stand_in.reached.append((raw or "", bool(body.get("stream")), rank))
                choice = {"index": 0, "text": "t", "logprobs": {"top_logprobs": [{"t": -0.5}]}}
                if not body.get("stream"):
                    return reply_json(self, 200, {"choices": [choice]})
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                self.wfile.write(f"data: {json.dumps({'choices': [choice]})}\n\ndata: [DONE]\n\n".encode())

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stand_in():
    servers: list[StandInDpServer] = []

    def start(engines: int = 4, server_info: dict | None = None) -> StandInDpServer:
        servers.append(StandInDpServer(engines, server_info))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def executor(url: str, **options) -> VllmExecutor:
    return VllmExecutor(8, 2, url=url, hidden=64, n_experts=8, tokens=4, retries=0, timeout_s=5.0, **options)


PROBES = [(0, 1), (1, 6), (2, 5), (3, 4), (4, 7), (5, 6), (6, 7), (0, 7), (7, 2)]


def test_member_pinning_sends_every_probe_request_to_the_engine_of_its_lowest_gpu(stand_in):
    server = stand_in(engines=4)
    with executor(server.url, data_parallel_size=4, check_routing=True) as ex:
        for probe in PROBES:
            server.reached.clear()
            result = ex.run(probe, repeats=3)
            assert result.ok, result.error
            want = ENGINE_OF_GPU[min(probe)]
            # three timed (streamed) requests and the plain routing request, all on that engine
            assert server.reached == [(str(want), True, want)] * 3 + [(str(want), False, want)], probe
            assert ex.last_details is not None and ex.last_details.dp_rank == want
    assert all(rank is None for _, rank in server.gets)  # /v1/models names no engine


def test_a_fixed_dp_rank_pins_every_probe_to_that_engine(stand_in):
    server = stand_in(engines=4)
    with executor(server.url, data_parallel_size=4, dp_rank=3) as ex:
        assert all(ex.run(probe, repeats=2).ok for probe in PROBES)
    assert server.reached == [("3", True, 3)] * (2 * len(PROBES))


def test_without_data_parallel_size_no_engine_is_named(stand_in):
    server = stand_in(engines=1)
    with executor(server.url) as ex:
        assert ex.run((2, 3), repeats=2).ok
        assert ex.last_details is not None and ex.last_details.dp_rank is None
    assert server.reached == [("", True, None)] * 2


def test_a_server_with_fewer_engines_answers_400_and_the_probe_is_an_error(stand_in):
    server = stand_in(engines=2)  # the fleet says 4 engines; the deployment has 2
    with executor(server.url, data_parallel_size=4) as ex:
        low, high = ex.run((0, 5)), ex.run((4, 5))
    assert low.ok
    assert not high.ok and "HTTP 400" in high.error and "data_parallel_rank 2 is out of range [0, 2)" in high.error


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"data_parallel_size": 3}, "data_parallel_size: 3 does not divide the replica's 8 GPUs"),
        ({"data_parallel_size": 0}, "data_parallel_size: must be an integer >= 1, got 0"),
        ({"data_parallel_size": True}, "data_parallel_size: must be an integer >= 1, got True"),
        ({"dp_rank": 1}, "dp_rank: 1 needs data_parallel_size"),
        ({"data_parallel_size": 4, "dp_rank": 4}, "dp_rank: engine 4 is outside 0..3"),
        ({"data_parallel_size": 4, "dp_rank": "0"}, "dp_rank: must be 'member' or an engine number, got '0'"),
    ],
)
def test_the_executor_refuses_bad_pinning_naming_the_option(options, message):
    with pytest.raises(ValueError, match="^" + message.replace("(", r"\(").replace(")", r"\)")):
        VllmExecutor(8, 2, url="http://127.0.0.1:9", **options)


def fleet_with(vllm: dict) -> dict:
    return {"ledger": "/tmp/ledger", "replicas": [{"name": "dp", "gpus": 8, "probe_size": 2, "executor": "vllm", "vllm": vllm}]}


@pytest.mark.parametrize(
    ("vllm", "message"),
    [
        ({"data_parallel_size": 3}, "replicas[0].vllm.data_parallel_size: 3 does not divide the replica's 8 GPUs"),
        ({"data_parallel_size": 16}, "replicas[0].vllm.data_parallel_size: 16 does not divide the replica's 8 GPUs"),
        ({"data_parallel_size": 0}, "replicas[0].vllm.data_parallel_size: Input should be greater than or equal to 1"),
        ({"data_parallel_size": "4"}, "replicas[0].vllm.data_parallel_size: Input should be a valid integer"),
        ({"dp_rank": 2}, "replicas[0].vllm.dp_rank: 2 needs data_parallel_size"),
        ({"data_parallel_size": 4, "dp_rank": 4}, "replicas[0].vllm.dp_rank: engine 4 is outside 0..3"),
        ({"data_parallel_size": 4, "dp_rank": -1}, "replicas[0].vllm.dp_rank: must be 'member' or an engine number"),
        ({"data_parallel_size": 4, "dp_rank": "lowest"}, "replicas[0].vllm.dp_rank: must be 'member' or an engine number"),
        ({"data_parallel_size": 4, "dp_rank": 1.0}, "replicas[0].vllm.dp_rank: must be 'member' or an engine number"),
        ({"check_layout": "yes"}, "replicas[0].vllm.check_layout: Input should be a valid boolean"),
    ],
)
def test_the_fleet_file_refuses_bad_pinning_naming_the_field(vllm, message):
    with pytest.raises(FleetError) as info:
        parse_fleet(fleet_with({"url": "http://probe:8000"} | vllm), "fleet.yaml")
    assert str(info.value).startswith(f"fleet.yaml: {message}"), str(info.value)


def test_a_bad_pinning_field_is_one_line_and_exit_2_on_the_command_line(tmp_path: Path):
    fleet = tmp_path / "fleet.yaml"
    fleet.write_text(
        "ledger: /tmp/ledger\nreplicas:\n  - {name: dp, gpus: 8, probe_size: 2, executor: vllm,\n"
        "     vllm: {url: 'http://probe:8000', data_parallel_size: 3}}\n"
    )
    result = CliRunner().invoke(app, ["sweep", "--fleet", str(fleet), "--hour", "2026-11-30-08:00"])
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "replicas[0].vllm.data_parallel_size: 3 does not divide" in lines[0], result.output


def test_the_fleet_fields_reach_the_executor(stand_in):
    server = stand_in(engines=4)
    fleet = parse_fleet(fleet_with({"url": server.url, "data_parallel_size": 4, "dp_rank": "member"}))
    options = executor_options(fleet.replicas[0])
    assert options["data_parallel_size"] == 4 and options["dp_rank"] == "member"
    with VllmExecutor(8, 2, hidden=64, n_experts=8, tokens=4, **options) as ex:
        assert ex.run((5, 7)).ok
    assert [raw for raw, _, _ in server.reached] == ["2"]


# -- check_layout: what the server says about its engines ---------------------------------


def test_a_matching_layout_is_accepted_and_gives_the_served_config(stand_in):
    server = stand_in(engines=4, server_info=layout(tp=2, dp=4))
    # no hidden / n_experts given and the root folder is not readable here: the server's config tells
    with VllmExecutor(8, 2, url=server.url, tokens=4, retries=0, data_parallel_size=4, check_layout=True) as ex:
        assert ex.run((1, 6)).ok
        served = ex.served_model()
        assert (served.hidden, served.n_experts, served.top_k) == (64, 8, 2)
        assert ex.served_layout is not None and ex.served_layout.ep_world == 8


@pytest.mark.parametrize(
    ("info", "dp", "message"),
    [
        (layout(tp=2, dp=2), 2, "rank count mismatch: server"),  # EP over 4 ranks, replica of 8
        (layout(tp=8, dp=1, ep=False), None, "runs without --enable-expert-parallel"),
        (layout(enable_eplb=True), 4, "expert load balancing (--enable-eplb)"),
        (layout(expert_placement_strategy="round_robin"), 4, "places experts 'round_robin'"),
        (layout(tp=2, dp=4), None, "runs 4 data-parallel engines but vllm.data_parallel_size is None; set it to 4"),
        (layout(tp=4, dp=2), 4, "runs 2 data-parallel engines but vllm.data_parallel_size is 4"),
        (layout(data_parallel_external_lb=True), 4, "balances its data-parallel engines externally"),
        ({"vllm_config": "ModelConfig(...)"}, 4, "has no JSON 'vllm_config.parallel_config'"),
        (layout(tensor_parallel_size="2"), 4, "parallel_config.tensor_parallel_size is a string"),
    ],
)
def test_a_layout_that_does_not_serve_the_replica_is_refused(stand_in, info, dp, message):
    server = stand_in(engines=4, server_info=info)
    with executor(server.url, data_parallel_size=dp, check_layout=True) as ex:
        result = ex.run((0, 1))
    assert not result.ok and message in result.error, result.error
    assert server.reached == []  # refused before any probe


def test_check_layout_needs_the_dev_mode_endpoint(stand_in):
    server = stand_in(engines=1, server_info=None)  # /server_info answers 404, as vLLM without VLLM_SERVER_DEV_MODE
    with executor(server.url, check_layout=True) as ex:
        result = ex.run((0, 1))
    assert not result.ok and "VLLM_SERVER_DEV_MODE=1" in result.error and "HTTP 404" in result.error
    with executor(server.url) as ex:  # off by default: no /server_info request at all
        assert ex.run((0, 1)).ok
    assert [path for path, _ in server.gets].count("/server_info?config_format=json") == 1
