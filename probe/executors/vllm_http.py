"""The ``vllm`` probe executor: probes sent to a vLLM OpenAI-compatible server over HTTP.

The server serves the probe checkpoint (``faultsense probe build``) with
``--enable-prompt-embeds``. A probe over GPU set ``S`` is a ``/v1/completions`` request whose
``prompt_embeds`` (base64 of ``torch.save`` of a ``(tokens, hidden)`` tensor, see
:func:`probe.encoding.probe_embeddings`) route every token to one expert on each GPU of
``S``; ``max_tokens=1`` and streaming, so the probe's latency is the client-side time to
first token (TTFT): request sent to first streamed chunk, in ms.

When the server has ``--enable-per-request-metrics`` its own TTFT
(``metrics.time_to_first_token_ms``, engine scheduling to first token) is kept alongside.
With ``check_routing`` and a server started with ``--enable-return-routed-experts`` (GPU
servers; vLLM's Model Runner V2), one extra request per probe reads back the experts every
token was routed to and the probe fails unless they lie exactly on ``S``; a server that
does not return them leaves the check skipped.

An unreachable, failing or mismatched server gives a :class:`ProbeMeasurement` with
``error`` set, never a latency and never evidence of a fault. The API key is read from an
environment variable and sent as a bearer token; it never appears in errors or ``repr``.
"""

from __future__ import annotations

import base64
import io
import json
import math
import os
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx
import numpy as np
import torch

from faultsense_pipelines.probe.encoding import gpus_of_routed_experts, probe_embeddings, probe_experts
from faultsense_pipelines.probes import ExecutorError, ProbeMeasurement

__all__ = ["ServedModel", "VllmExecutor", "VllmProbeDetails"]

RoutingCheck = Literal["matched", "skipped", "off"]


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
    """

    gpus: tuple[int, ...]
    client_ttft_ms: tuple[float, ...]
    server_ttft_ms: tuple[float | None, ...]
    top_logprobs: dict[str, float]
    routing: RoutingCheck


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
        timeout_s: timeout of each HTTP request, s.
        retries: further attempts after a retryable failure (``>= 0``).
        backoff_s: first retry delay, s; doubled on each further retry.
        check_routing: read routed experts back and check them (needs
            ``--enable-return-routed-experts`` on the server, else skipped).
        logprobs: how many top logprobs of the generated token to keep (0..20).

    Raises:
        ValueError: naming the bad value, for an invalid argument or a missing
            ``api_key_env`` variable.
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
    ) -> None:
        for label, value, low in (
            ("gpus", gpus, 1),
            ("probe_size", probe_size, 1),
            ("tokens", tokens, 1),
            ("retries", retries, 0),
            ("logprobs", logprobs, 0),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ValueError(f"{label} must be an integer >= {low}, got {value!r}")
        if probe_size > gpus:
            raise ValueError(f"probe_size must be <= gpus={gpus}, got {probe_size}")
        if not (isinstance(timeout_s, (int, float)) and math.isfinite(timeout_s) and timeout_s > 0):
            raise ValueError(f"timeout_s must be a finite number > 0, got {timeout_s!r}")
        if not url.startswith(("http://", "https://")):
            raise ValueError(f"url must start with http:// or https://, got {url!r}")
        headers = {}
        if api_key_env is not None:
            key = os.environ.get(api_key_env)
            if not key:
                raise ValueError(f"environment variable {api_key_env} (the vLLM API key) is not set")
            headers["Authorization"] = f"Bearer {key}"
        self.gpus = gpus
        self.probe_size = probe_size
        self.url = url.rstrip("/")
        self.tokens = tokens
        self.retries = retries
        self.backoff_s = backoff_s
        self.check_routing = check_routing
        self.logprobs = min(logprobs, 20)
        self.last_details: VllmProbeDetails | None = None
        self._wanted = (model, n_experts, hidden)
        self._served: ServedModel | None = None
        self._client = httpx.Client(base_url=self.url, headers=headers, timeout=httpx.Timeout(timeout_s))

    def __repr__(self) -> str:
        return f"VllmExecutor(gpus={self.gpus}, probe_size={self.probe_size}, url={self.url!r})"

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
        probe_experts(list(gpus), self.gpus, self.gpus, self.probe_size, 1)
        members = tuple(sorted(int(g) for g in gpus))
        self.last_details = None
        try:
            served = self.served_model()
            body = self._request_body(members, served)
            client, server = [], []
            top: dict[str, float] = {}
            for _ in range(repeats):
                ttft, server_ttft, top = self._with_retries(lambda: self._timed_probe(body))
                client.append(ttft)
                server.append(server_ttft)
            routing = self._check_routing(body, members, served)
        except ExecutorError as exc:
            return ProbeMeasurement(gpus=members, latencies_ms=(), error=str(exc))
        self.last_details = VllmProbeDetails(members, tuple(client), tuple(server), top, routing)
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
        cards = {card.get("id"): card for card in listing.get("data", [])}
        if want_model is None and len(cards) != 1:
            raise ExecutorError(f"server {self.url} serves {sorted(cards)}; pass model= to pick one")
        name = want_model if want_model is not None else next(iter(cards))
        if name not in cards:
            raise ExecutorError(f"server {self.url} does not serve model {name!r}; it serves {sorted(cards)}")
        config = _read_local_config(cards[name].get("root"))
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
        if n_experts % self.gpus or hidden < n_experts:
            raise ExecutorError(
                f"served model {name!r} has {n_experts} experts and hidden size {hidden}; "
                f"experts must be a multiple of gpus={self.gpus} and at most the hidden size"
            )
        return ServedModel(name=name, hidden=hidden, n_experts=n_experts, top_k=top_k)

    # -- requests --------------------------------------------------------------------

    def _request_body(self, members: tuple[int, ...], served: ServedModel) -> dict:
        embeds = probe_embeddings(
            members, self.gpus, served.n_experts, self.probe_size, served.hidden, self.tokens
        )  # (tokens, hidden) bf16
        buffer = io.BytesIO()
        torch.save(embeds, buffer)
        return {
            "model": served.name,
            "prompt_embeds": base64.b64encode(buffer.getvalue()).decode("ascii"),
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": self.logprobs,
        }

    def _timed_probe(self, body: dict) -> tuple[float, float | None, dict[str, float]]:
        """One streamed request: (client TTFT ms, server TTFT ms or None, top logprobs)."""
        stream_body = body | {"stream": True, "stream_options": {"include_usage": True}}
        ttft_ms: float | None = None
        server_ttft: float | None = None
        top: dict[str, float] = {}
        start = time.perf_counter()
        try:
            with self._client.stream("POST", "/v1/completions", json=stream_body) as response:
                _raise_for_status(response, read=True)
                for line in response.iter_lines():
                    if not line.startswith("data:") or line.strip() == "data: [DONE]":
                        continue
                    chunk = json.loads(line[len("data:") :])
                    if "error" in chunk:
                        raise ExecutorError(f"server error mid-stream: {_error_text(chunk)}")
                    if chunk.get("choices") and ttft_ms is None:
                        ttft_ms = (time.perf_counter() - start) * 1000.0
                        top = _top_logprobs(chunk["choices"][0])
                    server_ttft = (chunk.get("metrics") or {}).get("time_to_first_token_ms", server_ttft)
        except httpx.HTTPError as exc:
            raise _Retryable(f"request to {self.url}/v1/completions failed: {type(exc).__name__}: {exc}") from exc
        except json.JSONDecodeError as exc:
            raise ExecutorError(f"server {self.url} streamed a line that is not JSON: {exc}") from exc
        if ttft_ms is None:
            raise ExecutorError(f"server {self.url} closed the stream without a token")
        return ttft_ms, server_ttft, top

    def _check_routing(self, body: dict, members: tuple[int, ...], served: ServedModel) -> RoutingCheck:
        if not self.check_routing:
            return "off"
        response = self._with_retries(lambda: self._post_json("/v1/completions", body))
        encoded = (response.get("choices") or [{}])[0].get("routed_experts")
        if encoded is None:
            return "skipped"
        routed = np.load(io.BytesIO(base64.b64decode(encoded)))  # (tokens, layers, k)
        if routed.ndim != 3 or routed.shape[0] < 1:
            raise ExecutorError(f"routed experts have shape {routed.shape}, expected (tokens, layers, top_k)")
        per_token = gpus_of_routed_experts(routed[:, 0, :].astype(np.int64), self.gpus, served.n_experts)
        for t, got in enumerate(per_token):
            if got != frozenset(members):
                raise ExecutorError(f"routing mismatch: probe token {t} reached GPUs {sorted(got)}, expected {list(members)}")
        return "matched"

    def _get_json(self, path: str) -> dict:
        try:
            response = self._client.get(path)
        except httpx.HTTPError as exc:
            raise _Retryable(f"server {self.url} unreachable: {type(exc).__name__}: {exc}") from exc
        _raise_for_status(response)
        return response.json()

    def _post_json(self, path: str, body: dict) -> dict:
        try:
            response = self._client.post(path, json=body)
        except httpx.HTTPError as exc:
            raise _Retryable(f"request to {self.url}{path} failed: {type(exc).__name__}: {exc}") from exc
        _raise_for_status(response)
        return response.json()

    def _with_retries(self, attempt):
        """Call ``attempt`` up to ``1 + retries`` times, backing off after retryable failures."""
        for i in range(self.retries + 1):
            try:
                return attempt()
            except _Retryable as exc:
                if i == self.retries:
                    raise ExecutorError(f"{exc} (after {self.retries + 1} attempts)") from exc
                time.sleep(self.backoff_s * 2**i)
        raise AssertionError("unreachable")


def _raise_for_status(response: httpx.Response, read: bool = False) -> None:
    if response.status_code < 400:
        return
    if read:
        response.read()
    try:
        detail = _error_text(response.json())
    except ValueError:
        detail = response.text[:300]
    message = f"server answered HTTP {response.status_code} for {response.request.url.path}: {detail}"
    if response.status_code >= 500 or response.status_code == 429:
        raise _Retryable(message)
    raise ExecutorError(message)


def _error_text(payload: dict) -> str:
    error = payload.get("error", payload)
    return " ".join(str(error.get("message", error) if isinstance(error, dict) else error).split())[:300]


def _top_logprobs(choice: dict) -> dict[str, float]:
    tops = (choice.get("logprobs") or {}).get("top_logprobs") or [{}]
    return {str(token): float(value) for token, value in (tops[0] or {}).items()}


def _read_local_config(root: str | None) -> dict:
    """The served checkpoint's ``config.json`` when its folder is readable here, else ``{}``."""
    if not root:
        return {}
    try:
        return json.loads((Path(root) / "config.json").read_text())
    except (OSError, ValueError):
        return {}


def _agree(what: str, given: int | None, served: int | None, name: str) -> int | None:
    if given is not None and served is not None and given != served:
        raise ExecutorError(f"{what} mismatch: executor configured with {given} but served model {name!r} has {served}")
    return given if given is not None else served
