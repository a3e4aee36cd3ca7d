"""The rooms stay small: no module of serving/ or pipeline/ passes 350 lines (CONVENTIONS.md: split a module
past about 350 lines, by what it holds)."""

from __future__ import annotations

from secrag.settings import REPO_ROOT

MAX_LINES = 350
PACKAGES = ("serving", "pipeline")


def _line_counts() -> dict[str, int]:
    return {
        path.relative_to(REPO_ROOT).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for package in PACKAGES
        for path in sorted((REPO_ROOT / package).rglob("*.py"))
    }


def test_the_packages_hold_modules() -> None:
    counts = _line_counts()
    assert "serving/search/searcher.py" in counts
    assert "pipeline/definitions.py" in counts


def test_no_module_passes_the_line_limit() -> None:
    over = {path: lines for path, lines in _line_counts().items() if lines > MAX_LINES}
    assert not over, f"modules over {MAX_LINES} lines (split each by what it holds): {over}"
