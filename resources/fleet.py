"""The fleet resource: the fleet file every sweep reads, validated on each use."""

from __future__ import annotations

import dagster as dg

from faultsense_pipelines.fleet import Fleet, Replica, load_fleet

__all__ = ["FleetResource"]


class FleetResource(dg.ConfigurableResource):
    """The fleet file (YAML) listing the replicas to sweep.

    The file is re-read on every use, so a run always sees the replicas as they are now;
    a malformed file fails the run with one error naming the field.
    """

    path: str

    def load(self) -> Fleet:
        """The validated fleet (raises ``FleetError`` naming the bad field)."""
        return load_fleet(self.path)

    def replica(self, name: str) -> Replica:
        """One replica of the fleet (raises ``KeyError`` naming the unknown replica)."""
        return self.load().replica(name)
