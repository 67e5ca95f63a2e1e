"""Figures quoted in docs/ are the ones in the results files they cite (read from both files)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_no_file_cites_notes_that_are_not_in_the_repository() -> None:
    """Code, scripts and docs cited a field-notes file kept outside the repository."""
    name = "FIELD" + "-NOTES"  # spelled apart, so this file does not cite it
    citing = [
        str(p.relative_to(ROOT))
        for p in ROOT.rglob("*")
        if p.suffix in {".py", ".md", ".sh", ".yaml", ".toml"}
        and not {".venv", ".venv-vllm", ".git", "node_modules"} & set(p.relative_to(ROOT).parts)
        and p.is_file()
        and name in p.read_text(errors="replace")
    ]
    assert citing == []


def _totals(results: str) -> tuple[int, int, int]:
    """(sweeps, exact, healthy blamed) summed over a bench_sequential results table."""
    rows = [line.split("|")[1:-1] for line in results.splitlines() if line.startswith("| ") and "---" not in line]
    cells = [[c.strip() for c in row] for row in rows if row[0].strip() != "noise"]
    seeds = int(re.search(r"--seeds (\d+)", results).group(1))  # type: ignore[union-attr]
    return seeds * len(cells), sum(int(c[3]) for c in cells), sum(int(c[4]) for c in cells)


def test_verdicts_doc_quotes_the_sequential_results_files() -> None:
    """docs/verdicts.md's "Measured" figures are the sums of the tables it cites."""
    doc = " ".join((ROOT / "docs/verdicts.md").read_text().split())
    got = {
        name: _totals((ROOT / f"bench/results/{name}.md").read_text())
        for name in ("sequential", "sequential_r3", "sequential_shared", "sequential_shared_r3")
    }
    one, three = got["sequential"], got["sequential_r3"]
    shared_one, shared_three = got["sequential_shared"], got["sequential_shared_r3"]
    assert one[2] == three[2] == shared_one[2] == shared_three[2] == 0
    assert f"0 in {one[0] + three[0]:,} sweeps" in doc and f"0 in {shared_one[0] + shared_three[0]:,} sweeps" in doc
    assert f"exact in {three[1]:,} of {three[0]:,}" in doc and f"exact in {one[1]:,} of {one[0]:,}" in doc
    assert f"exact in {shared_three[1]:,} of {shared_three[0]:,}" in doc and f"{shared_one[1]:,} of {shared_one[0]:,}" in doc
