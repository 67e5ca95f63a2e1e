"""Figures quoted in docs/ are the ones in the results files they cite (read from both files)."""

from __future__ import annotations

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
