"""The ``vllm`` probe executor: probes sent to a vLLM OpenAI-compatible server over HTTP.

The server serves the probe checkpoint (``faultsense probe build``) with
``--enable-prompt-embeds``. A probe over GPU set ``S`` is a ``/v1/completions`` request whose
``prompt_embeds`` (base64 of ``torch.save`` of a ``(tokens, hidden)`` bf16 tensor, see
:func:`probe.encoding.probe_embeddings`; written by :mod:`probe.tensor_file` without torch,
so the client process never imports it) route every token to one expert on each GPU of
``S``; ``max_tokens=1`` and streaming, so the probe's latency is the client-side time to
first token (TTFT): request sent to first streamed chunk, in ms.

When the server has ``--enable-per-request-metrics`` its own TTFT
(``metrics.time_to_first_token_ms``, engine scheduling to first token) is kept alongside.
With ``check_routing`` and a server started with ``--enable-return-routed-experts`` (GPU
servers; vLLM's Model Runner V2), one extra request per probe reads back the experts every
token was routed to and the probe fails unless they lie exactly on ``S``; a server that
does not return them leaves the check skipped.

**Data parallelism.** Behind one URL, vLLM's internal load balancer picks the data-parallel
engine of each request. With ``data_parallel_size=D`` every probe request carries the header
``X-data-parallel-rank: r`` (:data:`probe.serve.DP_RANK_HEADER`), which vLLM's OpenAI server
reads in ``/v1/completions`` (prompt embeddings included) and hands to its engine client as
``data_parallel_rank``, bypassing the load balancer (vLLM
``vllm/entrypoints/generate/base/serving.py`` ``_get_data_parallel_rank``,
``vllm/v1/engine/core_client.py`` ``DPLBAsyncMPClient.get_core_engine_for_request``). vLLM
parses it with ``int()`` and *silently ignores* a value that is not an integer (the load
balancer then picks), and answers HTTP 400 (``data_parallel_rank r is out of range [0, D)``)
for one outside the engines, so the rank is checked here before any request. ``dp_rank``
chooses ``r``: ``"member"`` (default) the engine holding the probe's lowest GPU (engine
``d`` holds EP ranks ``[d*n/D, (d+1)*n/D)``: vLLM's EP rank is ``dp_rank * TP + tp_rank``), so
the engine that runs a probe's attention is one of its own; an integer pins every probe to
that engine. vLLM's external and hybrid load-balancer modes (one API server per engine or per
node) cannot be pinned through one URL: such a deployment needs one probe endpoint per engine.

With ``check_layout`` the executor reads the server's engine configuration from
``/server_info?config_format=json`` (served by vLLM only with ``VLLM_SERVER_DEV_MODE=1``) and
refuses a server whose expert-parallel world (``DP x PCP x TP``) is not ``gpus``, that
rebalances experts (EPLB) or places them round-robin, whose DP size is not
``data_parallel_size``, or that balances DP externally; its Hugging Face config gives the
served experts, top-k and hidden size when the checkpoint folder is not readable here.

An unreachable, failing or mismatched server gives a :class:`ProbeMeasurement` with
``error`` set, never a latency and never evidence of a fault. The API key is read from an
environment variable and sent as a bearer token; it never appears in errors or ``repr``
(every message passes :func:`faultsense_pipelines.redaction.scrub`).

Every request is bounded: one deadline (``timeout_s``) covers connecting, the first byte
and the whole body (a watchdog shuts the socket when it passes, so a server trickling
keep-alive bytes cannot hold a probe longer); bodies and streamed lines are read in chunks
and refused beyond ``max_body_bytes`` / ``max_line_bytes``; a malformed response (not JSON,
the wrong JSON shape, a logprob that is not a number) is an error naming what was wrong.
After ``breaker_after`` consecutive failed requests the executor's *circuit breaker* opens:
every later probe is an error at once, without a request, so a hung server costs a few
deadlines, not one per probe.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import io
import json
import math
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, TypeVar

import httpx
import numpy as np

from faultsense_pipelines.probe.encoding import gpus_of_routed_experts, probe_embedding_bits, probe_expert_ids
from faultsense_pipelines.probe.serve import DP_RANK_HEADER, check_dp_pinning
from faultsense_pipelines.probe.tensor_file import save_bf16
from faultsense_pipelines.redaction import clip, load_secret
from faultsense_pipelines.replica.executor import ExecutorError, ProbeMeasurement

__all__ = ["DpRank", "ServedLayout", "ServedModel", "VllmExecutor", "VllmProbeDetails"]

RoutingCheck = Literal["matched", "skipped", "off"]
#: Which data-parallel engine takes a probe: ``"member"`` (the engine of its lowest GPU) or a fixed engine.
DpRank = int | Literal["member"]
_T = TypeVar("_T")
_S = TypeVar("_S")


@dataclass(frozen=True)
class ServedModel:
    """The probe model a server serves, as the executor learned it.

    Attributes:
        name: the model id to put in requests (from ``/v1/models``).
        hidden: hidden size ``H`` (width of a probe embedding).
        n_experts: experts ``E`` in the MoE layer.
        top_k: experts per token (the probe size the checkpoint was built for), or ``None``
            when only given by the caller.
    """

    name: str
    hidden: int
    n_experts: int
    top_k: int | None


@dataclass(frozen=True)
class ServedLayout:
    """The engine layout a server reported (``/server_info``, vLLM's ``parallel_config``).

    Attributes:
        tensor_parallel: TP size ``T``.
        data_parallel: DP size ``D`` (engines).
        context_parallel: prefill context-parallel size ``P``.
        expert_parallel: ``--enable-expert-parallel``.
        ep_world: expert-parallel ranks, ``D * P * T`` with expert parallelism, else 1
            (vLLM ``FusedMoEParallelConfig.make``).
    """

    tensor_parallel: int
    data_parallel: int
    context_parallel: int
    expert_parallel: bool

    @property
    def ep_world(self) -> int:
        return self.data_parallel * self.context_parallel * self.tensor_parallel if self.expert_parallel else 1


@dataclass(frozen=True)
class VllmProbeDetails:
    """What the server said about the last probe, beyond its latencies.

    Attributes:
        gpus: the probe's GPUs, sorted.
        client_ttft_ms: client-side TTFT per repeat, ms (the measurement's latencies).
        server_ttft_ms: the server's ``time_to_first_token_ms`` per repeat, ms, or ``None``
            where the server does not report per-request metrics.
        top_logprobs: token -> logprob of the first generated token (last repeat).
        routing: ``"matched"`` (routed experts read back and on the probe's GPUs),
            ``"skipped"`` (asked for, but the server returns none), or ``"off"``.
        dp_rank: the data-parallel engine every request of the probe was pinned to
            (``X-data-parallel-rank``), or ``None`` when not pinned.
    """

    gpus: tuple[int, ...]
    client_ttft_ms: tuple[float, ...]
    server_ttft_ms: tuple[float | None, ...]
    top_logprobs: dict[str, float]
    routing: RoutingCheck
    dp_rank: int | None = None


class _Retryable(ExecutorError):
    """A failure worth another attempt (timeout, connection error, HTTP 5xx or 429)."""


class VllmExecutor:
    """Run probes on a vLLM server serving the probe checkpoint.

    Args:
        gpus: GPUs ``n`` in the replica the server runs (expert-parallel degree).
        probe_size: probe size ``k``; every probe has exactly ``k`` GPUs.
        url: server base URL, e.g. ``http://127.0.0.1:8000``.
        api_key_env: name of the environment variable holding the API key (bearer token),
            or ``None`` for a server without one.
        model: served model id; default: the only model ``/v1/models`` lists.
        n_experts, hidden: the served model's experts and hidden size. Default: read from
            the checkpoint's ``config.json`` when the model's ``root`` path is readable here;
            given values are checked against it.
        tokens: probe tokens per request.
        timeout_s: deadline of each HTTP request (connect + first byte + whole body), s.
        retries: further attempts after a retryable failure (``>= 0``).
        backoff_s: first retry delay, s; doubled on each further retry.
        check_routing: read routed experts back and check them (needs
            ``--enable-return-routed-experts`` on the server, else skipped).
        logprobs: how many top logprobs of the generated token to keep (0..20).
        max_body_bytes: largest response body read, bytes (streamed; never held whole beyond it).
        max_line_bytes: largest streamed line, bytes.
        breaker_after: consecutive failed requests that open the circuit breaker (>= 1).
        data_parallel_size: DP engines ``D`` behind ``url`` (vLLM ``--data-parallel-size``;
            must divide ``gpus``), or ``None`` for a server whose requests are not pinned.
        dp_rank: with ``data_parallel_size``, the engine each probe is pinned to:
            ``"member"`` (the engine of the probe's lowest GPU) or an engine ``0..D-1``.
        check_layout: read the server's engine layout from ``/server_info`` (needs
            ``VLLM_SERVER_DEV_MODE=1`` on the server) and refuse one that does not place the
            probe's experts on ``gpus`` expert-parallel ranks.

    Raises:
        ValueError: naming the bad value, for an invalid argument, or a missing or unusable
            ``api_key_env`` variable (:class:`~faultsense_pipelines.redaction.SecretError`,
            naming the variable, never the value).
    """

    name = "vllm"

    def __init__(
        self,
        gpus: int,
        probe_size: int,
        *,
        url: str,
        api_key_env: str | None = None,
        model: str | None = None,
        n_experts: int | None = None,
        hidden: int | None = None,
        tokens: int = 16,
        timeout_s: float = 30.0,
        retries: int = 2,
        backoff_s: float = 0.2,
        check_routing: bool = False,
        logprobs: int = 5,
        max_body_bytes: int = 16 << 20,
        max_line_bytes: int = 1 << 20,
        breaker_after: int = 3,
        data_parallel_size: int | None = None,
        dp_rank: DpRank = "member",
        check_layout: bool = False,
    ) -> None:
        for label, value, low in (
            ("gpus", gpus, 1),
            ("probe_size", probe_size, 1),
            ("tokens", tokens, 1),
            ("retries", retries, 0),
            ("logprobs", logprobs, 0),
            ("max_body_bytes", max_body_bytes, 1),
            ("max_line_bytes", max_line_bytes, 1),
            ("breaker_after", breaker_after, 1),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{label} must be an integer >= {low}, got {value!r}")
        if probe_size > gpus:
            raise ValueError(f"probe_size must be <= gpus={gpus}, got {probe_size}")
        if not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s) and timeout_s > 0):
            raise ValueError(f"timeout_s must be a finite number > 0, got {timeout_s!r}")
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {clip(repr(url), 80)}")
        check_dp_pinning(gpus, data_parallel_size, dp_rank)
        headers = {"Accept-Encoding": "identity"}
        if api_key_env is not None:
            headers["Authorization"] = f"Bearer {load_secret(api_key_env)}"
        self.gpus = gpus
        self.probe_size = probe_size
        self.url = url.rstrip("/")
        self.tokens = tokens
        self.retries = retries
        self.backoff_s = backoff_s
        self.check_routing = check_routing
        self.logprobs = min(logprobs, 20)
        self.timeout_s = float(timeout_s)
        self.max_body_bytes = max_body_bytes
        self.max_line_bytes = max_line_bytes
        self.breaker_after = breaker_after
        self.data_parallel_size = data_parallel_size
        self.dp_rank = dp_rank
        self.check_layout = bool(check_layout)
        self.served_layout: ServedLayout | None = None
        self.last_details: VllmProbeDetails | None = None
        self._wanted = (model, n_experts, hidden)
        self._served: ServedModel | None = None
        self._failures = 0  # consecutive failed requests
        self._breaker: str | None = None  # why the circuit is open
        self._socket: socket.socket | None = None  # the pooled connection's socket (one connection)
        self._client = httpx.Client(
            base_url=self.url,
            headers=headers,
            timeout=httpx.Timeout(self.timeout_s),
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
        )

    def __repr__(self) -> str:
        return f"VllmExecutor(gpus={self.gpus}, probe_size={self.probe_size}, url={self.url!r})"

    def engine_of(self, gpus: Sequence[int]) -> int | None:
        """The data-parallel engine a probe over ``gpus`` is pinned to, or ``None`` (not pinned).

        ``dp_rank="member"``: the engine holding the lowest GPU, ``min(gpus) // (n / D)``
        (vLLM's EP rank is ``dp_rank * TP + tp_rank``, so engine ``d`` holds EP ranks
        ``[d*n/D, (d+1)*n/D)``); an integer ``dp_rank``: that engine for every probe.

        Examples:
            >>> VllmExecutor(8, 2, url="http://h:1", data_parallel_size=4).engine_of([5, 2])
            1
            >>> VllmExecutor(8, 2, url="http://h:1", data_parallel_size=4, dp_rank=3).engine_of([0, 1])
            3
            >>> VllmExecutor(8, 2, url="http://h:1").engine_of([0, 1]) is None
            True
        """
        if self.data_parallel_size is None:
            return None
        if self.dp_rank != "member":
            return int(self.dp_rank)
        return min(int(g) for g in gpus) // (self.gpus // self.data_parallel_size)

    # -- the ProbeExecutor interface ---------------------------------------------------

    def run(self, gpus: Sequence[int], repeats: int = 1) -> ProbeMeasurement:
        """Measure the probe over ``gpus`` ``repeats`` times (client-side TTFT, ms).

        Raises:
            ValueError: for a GPU id outside ``0..gpus-1``, a duplicate, a probe without
                exactly ``probe_size`` GPUs, or ``repeats < 1``.
        """
        if isinstance(repeats, bool) or not isinstance(repeats, int) or repeats < 1:
            raise ValueError(f"repeats must be an integer >= 1, got {repeats!r}")
        # validates ids, duplicates and |S| == k before anything touches the network
        probe_expert_ids(list(gpus), self.gpus, self.gpus, self.probe_size, 1)
        members = tuple(sorted(int(g) for g in gpus))
        engine = self.engine_of(members)
        pin = {DP_RANK_HEADER: str(engine)} if engine is not None else {}
        self.last_details = None
        try:
            served = self.served_model()
            body = self._request_body(members, served)
            client, server = [], []
            top: dict[str, float] = {}
            for _ in range(repeats):
                ttft, server_ttft, top = self._with_retries(lambda: self._timed_probe(body, pin))
                client.append(ttft)
                server.append(server_ttft)
            routing = self._check_routing(body, members, served, pin)
        except ExecutorError as exc:
            return ProbeMeasurement(gpus=members, latencies_ms=(), error=clip(exc, 600))
        except Exception as exc:  # a response shape nothing above foresaw: still an error row, scrubbed
            message = f"malformed response from {self.url}: {type(exc).__name__}: {exc}"
            return ProbeMeasurement(gpus=members, latencies_ms=(), error=clip(message, 600))
        self.last_details = VllmProbeDetails(members, tuple(client), tuple(server), top, routing, engine)
        return ProbeMeasurement(gpus=members, latencies_ms=tuple(client))

    def close(self) -> None:
        """Close the HTTP connection pool. Safe to call twice."""
        self._client.close()

    def __enter__(self) -> VllmExecutor:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the served model ------------------------------------------------------------

    def served_model(self) -> ServedModel:
        """Learn (once) which model the server serves and its hidden size and experts.

        Raises:
            ExecutorError: if the server is unreachable, lists no usable model, or serves a
                model whose hidden size, experts or top-k do not match this executor.
        """
        if self._served is None:
            self._served = self._describe()
        return self._served

    def _describe(self) -> ServedModel:
        want_model, want_experts, want_hidden = self._wanted
        listing = self._with_retries(lambda: self._get_json("/v1/models"))
        data = _shape(listing.get("data", []), list, "/v1/models 'data'")
        cards: dict[str, dict] = {}
        for i, card in enumerate(data):
            card = _shape(card, dict, f"/v1/models 'data[{i}]'")
            cards[clip(_shape(card.get("id"), str, f"/v1/models 'data[{i}].id'"), 200)] = card
        if want_model is None and len(cards) != 1:
            raise ExecutorError(f"server {self.url} serves {sorted(cards)}; pass model= to pick one")
        name = want_model if want_model is not None else next(iter(cards))
        if name not in cards:
            raise ExecutorError(f"server {self.url} does not serve model {name!r}; it serves {sorted(cards)}")
        root = cards[name].get("root")
        config = _read_local_config(root if isinstance(root, str) else None)
        if self.check_layout:
            self.served_layout, served_config = self._read_layout()
            for key in ("hidden_size", "num_experts", "num_experts_per_tok"):
                if key in served_config and key in config and served_config[key] != config[key]:
                    raise ExecutorError(
                        f"served model {name!r}: the server's config has {key}={served_config[key]!r} but the "
                        f"checkpoint folder {clip(root, 200)} has {config[key]!r}"
                    )
            config = served_config | config
        hidden = _agree("hidden size", want_hidden, config.get("hidden_size"), name)
        n_experts = _agree("number of experts", want_experts, config.get("num_experts"), name)
        top_k = config.get("num_experts_per_tok")
        if hidden is None or n_experts is None:
            raise ExecutorError(f"cannot read the config of served model {name!r}; pass hidden= and n_experts=")
        if top_k is not None and top_k != self.probe_size:
            raise ExecutorError(
                f"probe size mismatch: executor probe_size={self.probe_size} but served "
                f"model {name!r} routes each token to num_experts_per_tok={top_k}"
            )
        built_for = _read_local_probe_ranks(root if isinstance(root, str) else None)
        if built_for is not None and built_for != self.gpus:
            raise ExecutorError(
                f"rank count mismatch: served probe checkpoint {name!r} places its experts on {built_for} "
                f"expert-parallel ranks (probe.json n_gpus) but the replica has gpus={self.gpus}; a FaultSense GPU "
                "is one expert-parallel rank of the engine (docs/probe-model.md)"
            )
        if n_experts % self.gpus or hidden < n_experts:
            raise ExecutorError(
                f"served model {name!r} has {n_experts} experts and hidden size {hidden}; "
                f"experts must be a multiple of gpus={self.gpus} and at most the hidden size"
            )
        return ServedModel(name=name, hidden=hidden, n_experts=n_experts, top_k=top_k)

    def _read_layout(self) -> tuple[ServedLayout, dict]:
        """The server's engine layout and Hugging Face config, from ``/server_info``.

        vLLM serves ``GET /server_info?config_format=json`` only with ``VLLM_SERVER_DEV_MODE=1``
        (``vllm/entrypoints/serve/dev``): ``{"vllm_config": {"parallel_config": {...},
        "model_config": {"hf_config": ...}}}``, the config dumped by pydantic with ``str`` as
        the fallback, so ``hf_config`` arrives as ``"OlmoeConfig {<json>}"`` (or a mapping).

        Returns:
            The :class:`ServedLayout` and the served ``hidden_size`` / ``num_experts`` /
            ``num_experts_per_tok`` found (an empty dict when the config is not there).

        Raises:
            ExecutorError: no ``/server_info`` (dev mode off), a reply without a JSON
                ``parallel_config``, or a layout that does not serve this replica: an
                expert-parallel world other than ``gpus``, expert load balancing (EPLB)
                or round-robin placement (experts then leave the GPUs the probe was built
                for), a DP size other than ``data_parallel_size``, or external / hybrid DP
                load balancing with pinning asked for.
        """
        path = "/server_info?config_format=json"
        try:
            info = self._with_retries(lambda: self._get_json(path))
        except ExecutorError as exc:
            raise ExecutorError(
                f"check_layout: cannot read the engine layout from {self.url}/server_info ({clip(exc, 200)}); "
                "vLLM serves it only with VLLM_SERVER_DEV_MODE=1 (or turn check_layout off)"
            ) from None
        vllm_config = info.get("vllm_config")
        parallel = vllm_config.get("parallel_config") if isinstance(vllm_config, dict) else None
        if not isinstance(parallel, dict):
            raise ExecutorError(
                f"check_layout: {self.url}/server_info has no JSON 'vllm_config.parallel_config' "
                "(a vLLM too old for config_format=json?)"
            )

        def size(key: str) -> int:
            value = parallel.get(key, 1)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ExecutorError(
                    f"malformed response: /server_info parallel_config.{key} is {_kind(value)}, expected an integer >= 1"
                )
            return value

        layout = ServedLayout(
            tensor_parallel=size("tensor_parallel_size"),
            data_parallel=size("data_parallel_size"),
            context_parallel=size("prefill_context_parallel_size"),
            expert_parallel=parallel.get("enable_expert_parallel") is True,
        )
        where = f"server {self.url} (/server_info)"
        if self.gpus > 1 and layout.ep_world != self.gpus:
            how = (
                f"places experts on {layout.ep_world} expert-parallel ranks (DP {layout.data_parallel} x PCP "
                f"{layout.context_parallel} x TP {layout.tensor_parallel})"
                if layout.expert_parallel
                else "runs without --enable-expert-parallel (every expert split over all TP ranks)"
            )
            raise ExecutorError(
                f"rank count mismatch: {where} {how} but the replica has gpus={self.gpus}; a FaultSense GPU is one "
                "expert-parallel rank of the engine (docs/probe-model.md)"
            )
        if parallel.get("enable_eplb") is True:
            raise ExecutorError(
                f"{where} runs expert load balancing (--enable-eplb): experts move between ranks, so a probe's GPUs are not fixed"
            )
        placement = parallel.get("expert_placement_strategy", "linear")
        if placement != "linear":
            raise ExecutorError(
                f"{where} places experts {clip(placement, 40)!r}; the probe checkpoint assumes 'linear' "
                "(GPU g hosts experts [g*E/n, (g+1)*E/n))"
            )
        wanted_dp = self.data_parallel_size or 1
        if layout.data_parallel != wanted_dp:
            raise ExecutorError(
                f"{where} runs {layout.data_parallel} data-parallel engines but vllm.data_parallel_size is "
                f"{self.data_parallel_size}; set it to {layout.data_parallel} so each probe is pinned to one engine"
            )
        if wanted_dp > 1 and (
            parallel.get("data_parallel_external_lb") is True or parallel.get("data_parallel_hybrid_lb") is True
        ):
            raise ExecutorError(
                f"{where} balances its data-parallel engines externally (one API server per engine or node): "
                "X-data-parallel-rank cannot reach the other engines; give each engine its own probe endpoint"
            )
        model_config = vllm_config.get("model_config") if isinstance(vllm_config, dict) else None
        hf = model_config.get("hf_config") if isinstance(model_config, dict) else None
        return layout, _hf_numbers(hf)

    # -- requests --------------------------------------------------------------------

    def _request_body(self, members: tuple[int, ...], served: ServedModel) -> dict:
        bits = probe_embedding_bits(
            members, self.gpus, served.n_experts, self.probe_size, served.hidden, self.tokens
        )  # (tokens, hidden) bf16 bit patterns
        return {
            "model": served.name,
            # torch.save's format, written without torch: this client never imports it
            "prompt_embeds": base64.b64encode(save_bf16(bits)).decode("ascii"),
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": self.logprobs,
        }

    def _timed_probe(self, body: dict, headers: dict[str, str]) -> tuple[float, float | None, dict[str, float]]:
        """One streamed request: (client TTFT ms, server TTFT ms or None, top logprobs)."""
        stream_body = body | {"stream": True, "stream_options": {"include_usage": True}}
        got: dict[str, object] = {"ttft": None, "server": None, "top": {}}
        start = time.perf_counter()

        def on_line(raw: bytes) -> None:
            line = raw.decode("utf-8", errors="replace").strip()
            if not line.startswith("data:") or line == "data: [DONE]":
                return
            chunk = _shape(_loads(line[len("data:") :], "a streamed line"), dict, "a streamed chunk")
            if "error" in chunk:
                raise ExecutorError(f"server error mid-stream: {_error_text(chunk)}")
            choices = chunk.get("choices")
            if choices is not None:
                choices = _shape(choices, list, "a streamed chunk's 'choices'")
            if choices and got["ttft"] is None:
                got["ttft"] = (time.perf_counter() - start) * 1000.0
                got["top"] = _top_logprobs(_shape(choices[0], dict, "'choices[0]'"))
            metrics = chunk.get("metrics")
            if metrics is not None:
                value = _shape(metrics, dict, "a streamed chunk's 'metrics'").get("time_to_first_token_ms")
                if value is not None:
                    got["server"] = _number(value, "'metrics.time_to_first_token_ms'")

        self._exchange("POST", "/v1/completions", stream_body, on_line, headers)
        if got["ttft"] is None:
            raise ExecutorError(f"server {self.url} closed the stream without a token")
        return got["ttft"], got["server"], got["top"]  # type: ignore[return-value]

    def _check_routing(self, body: dict, members: tuple[int, ...], served: ServedModel, headers: dict[str, str]) -> RoutingCheck:
        if not self.check_routing:
            return "off"
        response = self._with_retries(lambda: self._post_json("/v1/completions", body, headers))
        choices = _shape(response.get("choices") or [{}], list, "'choices'")
        encoded = _shape(choices[0], dict, "'choices[0]'").get("routed_experts")
        if encoded is None:
            return "skipped"
        try:
            routed = np.load(io.BytesIO(base64.b64decode(_shape(encoded, str, "'routed_experts'"), validate=True)))
        except (binascii.Error, ValueError, OSError, EOFError) as exc:
            raise ExecutorError(
                f"server {self.url} sent malformed 'routed_experts' (not a base64 .npy array): {type(exc).__name__}"
            ) from None
        if not isinstance(routed, np.ndarray) or routed.ndim != 3 or routed.shape[0] < 1 or routed.dtype.kind not in "iu":
            shape = getattr(routed, "shape", None)
            raise ExecutorError(f"routed experts have shape {shape}, expected integer (tokens, layers, top_k)")
        try:
            per_token = gpus_of_routed_experts(routed[:, 0, :].astype(np.int64), self.gpus, served.n_experts)
        except (ValueError, IndexError) as exc:
            raise ExecutorError(f"server {self.url} sent routed experts outside the model: {clip(exc, 120)}") from None
        for t, got in enumerate(per_token):
            if got != frozenset(members):
                raise ExecutorError(f"routing mismatch: probe token {t} reached GPUs {sorted(got)}, expected {list(members)}")
        return "matched"

    def _get_json(self, path: str) -> dict:
        return _shape(_loads(self._exchange("GET", path, None), f"the body of {path}"), dict, f"the body of {path}")

    def _post_json(self, path: str, body: dict, headers: dict[str, str] | None = None) -> dict:
        data = self._exchange("POST", path, body, None, headers)
        return _shape(_loads(data, f"the body of {path}"), dict, f"the body of {path}")

    def _trace(self, event: str, info: dict) -> None:
        """httpcore trace hook: remember the socket of each new connection (for the watchdog)."""
        if event in ("connection.connect_tcp.complete", "connection.start_tls.complete"):
            stream = info.get("return_value")
            sock = stream.get_extra_info("socket") if stream is not None else None
            if sock is not None:
                self._socket = sock

    def _exchange(
        self,
        method: str,
        path: str,
        body: dict | None,
        on_line: Callable[[bytes], None] | None = None,
        headers: dict[str, str] | None = None,
    ) -> bytes:
        """One request under the deadline ``timeout_s`` (connect + first byte + whole body),
        with ``headers`` on top of the client's own (the DP pin).

        The body is read in chunks, at most ``max_body_bytes``; with ``on_line`` each line of
        a successful answer (at most ``max_line_bytes``) is handed over as it arrives and
        ``b""`` is returned, else the whole body is.

        Raises:
            _Retryable: deadline passed, connection failed, HTTP 5xx / 429.
            ExecutorError: any other HTTP error status, an oversized body or line, a
                compressed body.
        """
        where = f"{self.url}{path}"
        expired = f"request to {where} exceeded its {self.timeout_s:g} s deadline (connect + first byte + whole body)"
        deadline = time.monotonic() + self.timeout_s
        fired = threading.Event()

        def fire() -> None:  # a silent or trickling server: cut the connection at the deadline
            fired.set()
            sock = self._socket
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(self.timeout_s, fire)
        timer.daemon = True
        timer.start()
        chunks: list[bytes] = []
        try:
            with self._client.stream(method, path, json=body, headers=headers, extensions={"trace": self._trace}) as response:
                stream = response.extensions.get("network_stream")
                if stream is not None and stream.get_extra_info("socket") is not None:
                    self._socket = stream.get_extra_info("socket")
                status = response.status_code
                encoding = response.headers.get("content-encoding", "identity").strip().lower()
                if encoding not in ("", "identity"):
                    raise ExecutorError(
                        f"server {where} sent a body with Content-Encoding {clip(encoding, 40)!r}; only identity is accepted"
                    )
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > self.max_body_bytes:
                    raise ExecutorError(
                        f"server {where} announced a body of {int(declared)} bytes, over the {self.max_body_bytes}-byte cap"
                    )
                lines = on_line is not None and status < 400
                received, pending = 0, bytearray()
                for chunk in response.iter_raw():
                    received += len(chunk)
                    if received > self.max_body_bytes:
                        raise ExecutorError(f"server {where} sent a body over the {self.max_body_bytes}-byte cap")
                    if time.monotonic() > deadline:
                        raise _Retryable(expired)
                    if not lines:
                        chunks.append(chunk)
                        continue
                    pending += chunk
                    while (end := pending.find(b"\n")) >= 0:
                        line = bytes(pending[:end])
                        del pending[: end + 1]
                        if len(line) > self.max_line_bytes:
                            raise ExecutorError(f"server {where} streamed a line over the {self.max_line_bytes}-byte cap")
                        on_line(line)  # type: ignore[misc]
                    if len(pending) > self.max_line_bytes:
                        raise ExecutorError(f"server {where} streamed a line over the {self.max_line_bytes}-byte cap")
                if lines and pending:
                    on_line(bytes(pending))  # type: ignore[misc]
        except httpx.HTTPError as exc:
            if fired.is_set() or time.monotonic() > deadline:
                raise _Retryable(expired) from None
            if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout):
                raise _Retryable(f"server {self.url} unreachable: {type(exc).__name__}: {clip(exc, 200)}") from None
            raise _Retryable(f"request to {where} failed: {type(exc).__name__}: {clip(exc, 200)}") from None
        finally:
            timer.cancel()
        if fired.is_set():
            raise _Retryable(expired)
        data = b"".join(chunks)
        _check_status(status, data, path)
        return data

    def _with_retries(self, attempt: Callable[[], _T]) -> _T:
        """Call ``attempt`` up to ``1 + retries`` times, backing off after retryable failures.

        Every failed request counts toward the circuit breaker; once ``breaker_after``
        consecutive requests failed it opens, and this (and every later call) raises at once.
        """
        for i in range(self.retries + 1):
            if self._breaker is not None:
                raise ExecutorError(self._breaker)
            try:
                value = attempt()
            except ExecutorError as exc:
                self._failures += 1
                last = i == self.retries or not isinstance(exc, _Retryable)
                message = f"{exc} (after {i + 1} attempts)" if isinstance(exc, _Retryable) and last else str(exc)
                if self._failures >= self.breaker_after:
                    self._breaker = (
                        f"circuit open after {self._failures} consecutive failed requests to {self.url}; "
                        f"no further probe is sent (last: {clip(message, 300)})"
                    )
                    raise ExecutorError(f"{message}; {self._breaker}" if i + 1 < self._failures else message) from None
                if last:
                    raise ExecutorError(message) from None
                time.sleep(self.backoff_s * 2**i)
            else:
                self._failures = 0
                return value
        raise AssertionError("unreachable")


def _loads(data: bytes | str, what: str) -> object:
    """JSON of ``data``, or an :class:`ExecutorError` saying ``what`` was not JSON."""
    try:
        return json.loads(data)
    except RecursionError:
        raise ExecutorError(f"malformed response: {what} nests too deeply") from None
    except ValueError as exc:  # JSONDecodeError, UnicodeDecodeError
        raise ExecutorError(
            f"malformed response: {what} is not JSON ({type(exc).__name__} at {getattr(exc, 'pos', '?')})"
        ) from None


_KINDS: dict[type, str] = {dict: "an object", list: "a list", str: "a string"}


def _kind(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return _KINDS.get(type(value), type(value).__name__)


def _shape(value: object, kind: type[_S], what: str) -> _S:
    """``value`` if it is a ``kind``, else an :class:`ExecutorError` naming ``what`` and what it was."""
    if not isinstance(value, kind):
        raise ExecutorError(f"malformed response: {what} is {_kind(value)}, expected {_KINDS.get(kind, kind.__name__)}")
    return value


def _number(value: object, what: str) -> float:
    """``value`` as a finite float, else an :class:`ExecutorError` naming ``what``."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ExecutorError(f"malformed response: {what} is {_kind(value)} that is not a finite number")
    return float(value)


def _check_status(status: int, data: bytes, path: str) -> None:
    if status < 400:
        return
    try:
        payload = json.loads(data)
        detail = _error_text(payload) if isinstance(payload, dict) else clip(data.decode("utf-8", "replace"), 300)
    except (ValueError, RecursionError):
        detail = clip(data.decode("utf-8", "replace"), 300)
    message = f"server answered HTTP {status} for {path}: {detail}"
    if status >= 500 or status == 429:
        raise _Retryable(message)
    raise ExecutorError(message)


def _error_text(payload: dict) -> str:
    """The server's error message, scrubbed, whitespace collapsed, at most 300 characters."""
    error = payload.get("error", payload)
    return clip(error.get("message", error) if isinstance(error, dict) else error, 300)


def _top_logprobs(choice: dict) -> dict[str, float]:
    logprobs = choice.get("logprobs")
    if logprobs is None:
        return {}
    tops = _shape(logprobs, dict, "'choices[0].logprobs'").get("top_logprobs")
    if not tops:
        return {}
    first = _shape(tops, list, "'logprobs.top_logprobs'")[0]
    if first is None:
        return {}
    return {
        clip(token, 200): _number(value, f"the logprob of token {clip(repr(token), 40)}")
        for token, value in _shape(first, dict, "'logprobs.top_logprobs[0]'").items()
    }


def _read_local_config(root: str | None) -> dict:
    """The served checkpoint's ``config.json`` when its folder is readable here, else ``{}``."""
    if not root:
        return {}
    try:
        return json.loads((Path(root) / "config.json").read_text())
    except (OSError, ValueError):
        return {}


def _read_local_probe_ranks(root: str | None) -> int | None:
    """The expert-parallel ranks the served checkpoint was built for (``probe.json``
    ``n_gpus``) when its folder is readable here, else ``None``."""
    if not root:
        return None
    try:
        n = json.loads((Path(root) / "probe.json").read_text()).get("n_gpus")
    except (OSError, ValueError, AttributeError):
        return None
    return n if isinstance(n, int) and not isinstance(n, bool) else None


def _agree(what: str, given: int | None, served: int | None, name: str) -> int | None:
    if given is not None and served is not None and given != served:
        raise ExecutorError(f"{what} mismatch: executor configured with {given} but served model {name!r} has {served}")
    return given if given is not None else served


def _hf_numbers(hf: object) -> dict:
    """``hidden_size``, ``num_experts`` and ``num_experts_per_tok`` of a served Hugging Face
    config: a mapping, or pydantic's ``str`` fallback ``"OlmoeConfig {<json>}"``; ``{}`` if
    neither (or not integers)."""
    if isinstance(hf, str) and "{" in hf:
        try:
            hf = json.loads(hf[hf.index("{") :])
        except (ValueError, RecursionError):
            return {}
    if not isinstance(hf, dict):
        return {}
    keys = ("hidden_size", "num_experts", "num_experts_per_tok")
    return {k: hf[k] for k in keys if isinstance(hf.get(k), int) and not isinstance(hf.get(k), bool)}
