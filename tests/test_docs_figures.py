"""Figures quoted in docs/ are the ones in the results files they cite (read from both files)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _rows(text: str, first: str) -> dict[str, list[str]]:
    """Markdown table rows whose first cell is in ``first``, as lists of stripped cells."""
    out = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and cells[0] in first.split(","):
            out.setdefault(cells[0], cells)
    return out


def test_evidence_doc_quotes_the_all_families_rows_of_its_results_file() -> None:
    """docs/evidence.md quoted recall 0.950 and 1,000 healthy sweeps where the files it cites
    say 0.998 and 1,500."""
    doc = (ROOT / "docs/evidence.md").read_text()
    measured = doc[doc.index("## Measured (bench/results/evidence.md)") :]
    results = (ROOT / "bench/results/evidence.md").read_text()
    summary = results[results.index("| all families |") :]
    quoted, stored = _rows(measured, "adaptive,evidence"), _rows(summary, "adaptive,evidence")
    for method in ("adaptive", "evidence"):
        # doc: precision, recall, wrong/100, probes; results: sweeps, precision, recall, wrong/100, probes
        assert quoted[method][1:] == stored[method][2:], (method, quoted[method], stored[method])
    healthy = (ROOT / "bench/results/evidence_healthy.md").read_text()
    (sweeps,) = re.findall(r"\| healthy \| evidence \| (\d+) \|", healthy)
    assert f"Healthy replicas under the same noise, {int(sweeps):,} sweeps" in " ".join(measured.split())
    noise_free = (ROOT / "bench/results/evidence_noise_free.md").read_text()
    runs = _rows(noise_free, "gpu,link,both")
    total, exact = sum(int(r[1]) for r in runs.values()), sum(int(r[3]) for r in runs.values())
    assert f"exact in {exact} of {total}" in " ".join(measured.split())


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
