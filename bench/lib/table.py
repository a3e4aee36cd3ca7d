"""A plain-text table with a header row, columns sized to their widest cell, numbers right-aligned."""

from __future__ import annotations

from collections.abc import Sequence


def cell(value: object) -> str:
    if isinstance(value, float):
        return f"{value:.3f}" if abs(value) < 1 else f"{value:.1f}"
    return "" if value is None else str(value)


def print_table(headers: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    text = [[cell(v) for v in row] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in text)]) for i, h in enumerate(headers)]
    numeric = [all(isinstance(row[i], int | float) or row[i] is None for row in rows) for i in range(len(headers))]

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if n else c.ljust(w) for c, w, n in zip(cells, widths, numeric, strict=True))

    print(line(headers).rstrip())
    for row in text:
        print(line(row).rstrip())
