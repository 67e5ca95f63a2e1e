"""``probe_cover``: the Phase 1 plan of each replica shape (n GPUs, probe size k) in the fleet."""

import re

import dagster as dg

from faultsense_pipelines.cover import Cover, plan_cover

from .partitions import cover_partitions

__all__ = ["build_cover_asset", "parse_shape"]

_SHAPE = re.compile(r"n(\d+)-k(\d+)")


def parse_shape(key: str) -> tuple[int, int]:
    """``"n64-k8"`` -> ``(64, 8)``.

    Raises:
        ValueError: naming a key that is not a shape.
    """
    m = _SHAPE.fullmatch(key)
    if not m:
        raise ValueError(f"cover partition must look like 'n64-k8', got {key!r}")
    return int(m.group(1)), int(m.group(2))


class CoverConfig(dg.Config):
    """How to build the cover: ``best`` (default, near the Schönheim bound) or ``greedy``
    (the paper's Algorithm 1)."""

    method: str = "best"


def build_cover_asset(shapes: list[str]) -> dg.AssetsDefinition:
    """The ``probe_cover`` asset, one static partition per shape of the fleet."""

    @dg.asset(
        partitions_def=cover_partitions(shapes),
        group_name="plan",
        kinds={"python"},
        description="Phase 1 cover (FaultSense §4.2): size-k probes covering every GPU and GPU pair of an n-GPU replica.",
    )
    def probe_cover(context: dg.AssetExecutionContext, config: CoverConfig) -> dg.Output[Cover]:
        n, k = parse_shape(context.partition_key)
        cover = plan_cover(n, k, config.method)
        preview = "\n".join(f"- {list(p)}" for p in cover.probes[:12])
        more = f"\n- ... {len(cover.probes) - 12} more" if len(cover.probes) > 12 else ""
        return dg.Output(
            cover,
            metadata={
                "gpus": n,
                "probe_size": k,
                "method": cover.method,
                "probes": len(cover.probes),
                "lower_bound": cover.lower_bound,
                "probes_over_bound": round(len(cover.probes) / cover.lower_bound, 3),
                "all_pairs": cover.all_pairs,
                "fewer_than_all_pairs": f"{cover.all_pairs / len(cover.probes):.1f}x",
                "rounds": len(cover.rounds),
                "first_probes": dg.MetadataValue.md(preview + more),
            },
        )

    return probe_cover
