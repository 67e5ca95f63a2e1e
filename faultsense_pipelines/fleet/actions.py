"""``actions:`` of a fleet file: what to run when a sweep confirms a fault, or sees it resolved.

```yaml
actions:
  - name: cordon
    on: confirmed                 # or resolved
    command: [/opt/ops/cordon.sh] # or webhook: {url: ..., headers_env: {Authorization: OPS_TOKEN}}
    dry_run: false                # default true: decide and record, run nothing
    kinds: [gpu, nic]             # default: every kind
    min_confidence: 0.999
    replicas: [prod-a]            # default: every replica
    persist: [2, 3]               # confirmed in 2 of the replica's last 3 sweeps; default [1, 1]
    max_per_replica: 1            # nodes / components acted on within window_hours
    max_per_fleet: 4
    window_hours: 24
    cooldown_hours: 24            # not again on the same component within this many hours
    max_attempts: 3               # attempts on one component within history_days
    resolve_after: 2              # resolved: healthy in this many later sweeps
    timeout_s: 30
    env: [KUBECONFIG]             # variables of the sweep's environment the command may see
```

Validated once here (pydantic, frozen, unknown keys refused); the runtime that decides and
runs them is :mod:`faultsense_pipelines.actions`. Every error names the field, e.g.
``actions[0].persist: need 1 <= M <= N, got [3, 2]``; secrets never appear in one (an action
names the *variables* holding webhook header values, never the values).
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from pydantic import Field, field_validator, model_validator

from ..replica.vocabulary import ComponentKind
from ..validation import redact_url, shown
from .sections import Float, Int, StrictModel

__all__ = ["ActionSpec", "WebhookSpec", "check_actions"]

_ENV_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_HEADER = re.compile(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,128}")
#: Variables an action's command always gets (besides its ``env`` and the verdict's): none of
#: the parent's environment but ``PATH``.
_RESERVED_ENV = ("PATH",)


class WebhookSpec(StrictModel):
    """``webhook:`` of an action: POST the verdict as JSON to ``url``.

    Attributes:
        url: ``http://`` or ``https://``, without ``user:password@`` (put credentials in a
            header through ``headers_env``).
        headers_env: header name -> the *name* of the environment variable holding its value
            (read at run time, never stored, logged or shown).
    """

    url: Annotated[str, Field(min_length=1, max_length=2048)]
    headers_env: dict[str, str] = Field(default_factory=dict)

    @field_validator("url")
    @classmethod
    def _url(cls, v: str) -> str:
        if not re.match(r"https?://[^/\s]+", v) or any(c.isspace() or ord(c) < 32 for c in v):
            raise ValueError(f"must be an http:// or https:// URL without whitespace, got {shown(redact_url(v))}")
        if "@" in v.split("/", 3)[2]:
            raise ValueError(f"must not hold user:password@ (give credentials in headers_env), got {shown(redact_url(v))}")
        return v

    @field_validator("headers_env")
    @classmethod
    def _headers(cls, v: dict[str, str]) -> dict[str, str]:
        for header, variable in v.items():
            if not _HEADER.fullmatch(header):
                raise ValueError(f"header name {shown(header)} is not a valid HTTP header name")
            if not isinstance(variable, str) or not _ENV_NAME.fullmatch(variable):
                raise ValueError(
                    f"{header}: must name the environment variable holding the value ([A-Za-z_][A-Za-z0-9_]*); "
                    "got something else, not shown (it may be the secret itself)"
                )
        return v


class ActionSpec(StrictModel):
    """One entry of ``actions:`` (see the module docstring for the YAML).

    Attributes:
        name: ``[a-z0-9_-]``, 1-64, unique in the fleet; part of every decision's key.
        on: ``confirmed`` (a sweep confirmed the component) or ``resolved`` (a component
            confirmed before was judged healthy in ``resolve_after`` later sweeps).
        command: argv (no shell); the verdict as JSON on stdin and as ``FAULTSENSE_*``
            variables. Exactly one of ``command`` and ``webhook``.
        webhook: POST the verdict as JSON (:class:`WebhookSpec`).
        dry_run: decide and record, run nothing (default True).
        kinds: component kinds acted on (default: every kind).
        min_confidence: a verdict below it (or without a confidence) is skipped, recorded.
        replicas: replicas acted on (default: every replica).
        persist: ``[M, N]``: act only when confirmed in M of the replica's last N sweeps.
        max_per_replica, max_per_fleet: the most nodes (components where the node is unknown)
            this action acts on within ``window_hours``, per replica and in the whole fleet.
        window_hours: the blast-radius window (hours of sweep partitions, 1..720).
        cooldown_hours: no second attempt on a component within this many hours after an
            attempt at the same or an earlier hour (0: none).
        max_attempts: the most attempts on one component within ``history_days``.
        resolve_after: ``on: resolved``: healthy in this many later sweeps (K >= 1).
        timeout_s: the command or webhook is stopped after this many seconds (0.1..3600).
        env: names of variables of the sweep's environment the command also sees.
        history_days: how many days of the ledger the guards read (1..31).
    """

    name: str
    on: Literal["confirmed", "resolved"]
    command: Annotated[list[Annotated[str, Field(min_length=1, max_length=4096)]], Field(min_length=1, max_length=64)] | None = (
        None
    )
    webhook: WebhookSpec | None = None
    dry_run: bool = True
    kinds: Annotated[list[ComponentKind], Field(min_length=1)] | None = None
    min_confidence: Annotated[Float, Field(ge=0.0, le=1.0)] | None = None
    replicas: Annotated[list[str], Field(min_length=1)] | None = None
    persist: tuple[Annotated[Int, Field(ge=1, le=168)], Annotated[Int, Field(ge=1, le=168)]] = (1, 1)
    max_per_replica: Annotated[Int, Field(ge=0, le=100_000)] | None = None
    max_per_fleet: Annotated[Int, Field(ge=0, le=100_000)] | None = None
    window_hours: Annotated[Int, Field(ge=1, le=720)] = 24
    cooldown_hours: Annotated[Int, Field(ge=0, le=720)] = 24
    max_attempts: Annotated[Int, Field(ge=1, le=1000)] = 3
    resolve_after: Annotated[Int, Field(ge=1, le=168)] = 2
    timeout_s: Annotated[Float, Field(gt=0.0, le=3600.0)] = 30.0
    env: list[str] = Field(default_factory=list)
    history_days: Annotated[Int, Field(ge=1, le=31)] = 7

    @model_validator(mode="before")
    @classmethod
    def _yaml_on(cls, data: Any) -> Any:
        # YAML 1.1 reads the key `on` as the boolean true: take it back as the field `on`
        if isinstance(data, dict) and True in data and "on" not in data:
            return {("on" if k is True else k): v for k, v in data.items()}
        return data

    @field_validator("name")
    @classmethod
    def _name(cls, v: str) -> str:
        if not re.fullmatch(r"[a-z0-9_-]{1,64}", v):
            raise ValueError(f"must be 1-64 of a-z, 0-9, '_' and '-', got {shown(v)}")
        return v

    @field_validator("persist")
    @classmethod
    def _persist(cls, v: tuple[int, int]) -> tuple[int, int]:
        if not v[0] <= v[1]:
            raise ValueError(f"need 1 <= M <= N (confirmed in M of the last N sweeps), got [{v[0]}, {v[1]}]")
        return v

    @field_validator("env")
    @classmethod
    def _env(cls, v: list[str]) -> list[str]:
        for name in v:
            if not _ENV_NAME.fullmatch(name):
                raise ValueError(
                    "must name environment variables ([A-Za-z_][A-Za-z0-9_]*); got something else, not shown "
                    "(it may be a secret value)"
                )
            if name.startswith("FAULTSENSE_") or name in _RESERVED_ENV:
                raise ValueError(f"{shown(name)} is set by FaultSense itself (PATH and the FAULTSENSE_* verdict variables)")
        return v

    @model_validator(mode="after")
    def _one_target(self) -> ActionSpec:
        if (self.command is None) == (self.webhook is None):
            raise ValueError("give exactly one of command (argv) and webhook")
        return self

    @property
    def target(self) -> str:
        """What it runs, safe to show: the command's program, or ``webhook <scheme://host>``."""
        if self.command is not None:
            return self.command[0]
        assert self.webhook is not None
        return "webhook " + "/".join(self.webhook.url.split("/", 3)[:3])


def check_actions(actions: list[ActionSpec], replicas: list[str]) -> None:
    """Names unique, and every ``replicas:`` filter naming replicas of the fleet.

    Raises:
        ValueError: ``"[i].name: ..."`` or ``"[i].replicas: ..."`` (the fleet prefixes ``actions``).
    """
    seen: dict[str, int] = {}
    for i, a in enumerate(actions):
        if a.name in seen:
            raise ValueError(f"[{i}].name: {shown(a.name)} is already the name of actions[{seen[a.name]}]; names must be unique")
        seen[a.name] = i
        for name in a.replicas or ():
            if name not in replicas:
                raise ValueError(f"[{i}].replicas: {shown(name)} is not a replica of the fleet")
