"""Plain-text tables for benchmark results on a terminal."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    cells = [[str(h) for h in headers]] + [[_fmt(c) for c in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(headers))]
    lines = []
    for n, row in enumerate(cells):
        lines.append(
            "  ".join(
                c.ljust(w) if i == 0 else c.rjust(w)
                for i, (c, w) in enumerate(zip(row, widths, strict=True))
            )
        )
        if n == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _fmt(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.1f}"
    return str(value)


def whowhen_table(groups: dict[str, dict[str, Any]]) -> str:
    headers = [
        "group",
        "traces",
        "agent %",
        "step %",
        "step±1 %",
        "agent+step %",
        "agent+step±1 %",
        "calls/trace",
        "in tok/trace",
        "out tok/trace",
    ]
    rows = [
        [
            name,
            g["traces"],
            g["agent"],
            g["step"],
            g["step_within_1"],
            g["agent_and_step"],
            g["agent_and_step_within_1"],
            g["calls_per_trace"]["mean"],
            g["input_tokens_per_trace"]["mean"],
            g["output_tokens_per_trace"]["mean"],
        ]
        for name, g in groups.items()
    ]
    return table(headers, rows)
