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


def _local_run(results: str, tag: str) -> tuple[str, int, int]:
    """(load range, exact, sweeps) of the evidence row of run ``tag`` in local_sweep.md."""
    start = results.index(f"## run {tag}:")
    end = results.find("\n## ", start + 1)
    section = results[start : end if end > 0 else len(results)]
    (load,) = re.findall(r"load1 ([\d.]+-[\d.]+)", section.splitlines()[0])
    (exact, n) = re.findall(r"\| evidence \| (\d+)/(\d+) \|", section)[0]
    return load, int(exact), int(n)


def test_evidence_doc_quotes_the_local_sweep_runs_it_cites() -> None:
    """docs/evidence.md quoted 10 local sweeps where the runs it cites hold 20."""
    doc = " ".join((ROOT / "docs/evidence.md").read_text().split())
    results = (ROOT / "bench/results/local_sweep.md").read_text()
    s1, s3, h1, h3 = (
        _local_run(results, f"{run}-38018a2") for run in ("hog1-straggler", "hog3-straggler", "hog1-healthy", "hog3-healthy")
    )
    assert (
        f"with one CPU hog (load {s1[0]}) {s1[1]} of {s1[2]} sweeps confirmed `gpu:2` alone, with three (load {s3[0]}) "
        f"{s3[1]} of {s3[2]}; healthy replicas blamed nothing in {h1[1]} of {h1[2]} sweeps with one hog and "
        f"{h3[1]} of {h3[2]} with three"
    ) in doc
