"""Compare the rows of two ledgers, sweep ids and timestamps aside.

Usage::

    python scripts/compare_ledgers.py LEDGER_A LEDGER_B [--ignore COLUMN ...]

Reads every dataset (``fault_ledger``, ``probe_runs``, ``sweeps``, ``actions``) of both
ledgers' Delta tables (:meth:`~faultsense_pipelines.ledger.LedgerStore.read_table`), drops the
columns that differ between two runs of the same sweep (``sweep_id``, the timestamps
``detected_at``, ``started_at``, ``finished_at``, ``decided_at``, and any ``--ignore`` column),
sorts the rows and compares them. Prints one line per dataset (its row count and ``same`` or
``DIFFERENT``, with the first differing row of each side) and exits 0 when every dataset is
the same, 1 otherwise, 2 on bad input.

Used to check a refactoring that must leave a sweep's ledger rows byte for byte as they were:
sweep the same fleet and hour into two fresh ledgers (``faultsense sweep --ledger A``, then
``--ledger B`` on the changed code) and compare them.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from faultsense_pipelines.ledger import LedgerStore

#: Columns that differ between two runs of one sweep: the run's id and wall-clock times.
VOLATILE = ("sweep_id", "detected_at", "started_at", "finished_at", "decided_at")
DATASETS = ("fault_ledger", "probe_runs", "sweeps", "actions")


def canonical_rows(ledger: str, dataset: str, ignore: tuple[str, ...]) -> list[str]:
    """Every row of ``dataset`` in ``ledger`` as sorted JSON text, ``ignore`` columns left out
    (empty when the ledger has no table yet)."""
    store = LedgerStore(ledger)
    if store.version() is None:
        return []
    table = store.read_table(dataset)
    keep = [c for c in table.column_names if c not in ignore]
    rows = table.select(keep).to_pylist()
    return sorted(json.dumps(r, sort_keys=True, default=str) for r in rows)


def main(argv: list[str] | None = None) -> int:
    """Compare two ledgers; the exit status of the comparison (0 same, 1 different, 2 bad input)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("ledgers", nargs=2, help="two ledger paths")
    parser.add_argument("--ignore", action="append", default=[], help="a further column to leave out (repeatable)")
    args = parser.parse_args(argv)
    for ledger in args.ledgers:
        if not Path(ledger, "delta").is_dir():
            print(f"ledger {ledger}: no Delta table (no delta/ folder)", file=sys.stderr)
            return 2
    ignore = (*VOLATILE, *args.ignore)
    same = True
    for dataset in DATASETS:
        a, b = (canonical_rows(ledger, dataset, ignore) for ledger in args.ledgers)
        if a == b:
            print(f"{dataset}: {len(a)} rows, same")
            continue
        same = False
        only_a, only_b = sorted(set(a) - set(b)), sorted(set(b) - set(a))
        print(f"{dataset}: {len(a)} vs {len(b)} rows, DIFFERENT")
        print(f"  first only in A: {only_a[0] if only_a else '-'}")
        print(f"  first only in B: {only_b[0] if only_b else '-'}")
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
