"""`python -m bot audit --summary`: the approval analytics (`memory.approval_analytics`) on the command line.

A table for people (one per tool, one per person), or one JSON object or CSV row per tool and person for
tools: `kind` (`tool` or `person`), `name`, then every number of `memory.DecisionStats` (times in seconds).
"""

from __future__ import annotations

import csv
import io
import json
import sys
from datetime import datetime
from typing import TextIO

from memory import ApprovalAnalytics, DecisionStats, Storage, approval_analytics

from .admin import AdminInputError

COLUMNS = ("waiting", "decided", "p50", "p95", "declined", "expired", "cancelled", "undone", "quick")
"""What the table shows, in order (`approved` is decided - declined - cancelled; it is in jsonl and csv)."""
FIELDS = ("kind", "name", *DecisionStats.__dataclass_fields__)


def seconds_words(seconds: float | None) -> str:
    """A time to decision as the table shows it: `12 s`, `2.5 s`, `4 min 10 s`, `3 h 5 min`; `-` for none."""
    if seconds is None:
        return "-"
    if seconds < 60:
        return f"{round(seconds, 1):g} s"
    whole = round(seconds)
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return f"{minutes} min {rest} s" if rest else f"{minutes} min"
    hours, rest = divmod(whole, 3600)
    return f"{hours} h {rest // 60} min" if rest // 60 else f"{hours} h"


def rows_of(analytics: ApprovalAnalytics) -> list[dict[str, object]]:
    """One flat record per tool, then per person."""
    rows: list[dict[str, object]] = []
    for kind, named in (("tool", analytics.tools), ("person", analytics.people)):
        rows += [{"kind": kind, "name": name, **stats.fields()} for name, stats in named.items()]
    return rows


async def print_summary(
    storage: Storage,
    *,
    quick: float,
    since: datetime | None = None,
    tool_name: str | None = None,
    format: str = "table",
    out: TextIO | None = None,
) -> ApprovalAnalytics:
    """Print the approval analytics of `storage` (to `out`, else `sys.stdout` as it is when called)."""
    out = out or sys.stdout
    analytics = await approval_analytics(storage, quick_seconds=quick, since=since, tool_name=tool_name)
    rows = rows_of(analytics)
    if format == "jsonl":
        for row in rows:
            print(json.dumps(row, ensure_ascii=False), file=out)
    elif format == "csv":
        buffer = io.StringIO()
        writer = csv.DictWriter(buffer, fieldnames=FIELDS, lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        out.write(buffer.getvalue())
    elif format == "table":
        _print_tables(analytics, out)
    else:
        raise AdminInputError(f"--format {format!r}: use table, jsonl or csv")
    return analytics


def _print_tables(analytics: ApprovalAnalytics, out: TextIO) -> None:
    quick = f"{analytics.quick_seconds:g}"
    print(f"Approvals: time from the request to the decision; quick = approved within {quick} s", file=out)
    for title, named in (("TOOL", analytics.tools), ("PERSON", analytics.people)):
        print(file=out)
        if not named:
            print(f"{title}: none yet", file=out)
            continue
        lines = [(title, *(column.upper() for column in COLUMNS))]
        for name, stats in named.items():
            values = stats.fields()
            cells = [seconds_words(values[c]) if c in ("p50", "p95") else str(values[c]) for c in COLUMNS]  # type: ignore[arg-type]
            lines.append((name, *cells))
        widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
        for line in lines:
            print("  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip(), file=out)


__all__ = ["print_summary", "rows_of", "seconds_words"]
