"""Where a running tool's progress goes: `ToolContext.progress` hands each line to the sink of the run whose
task runs the tool (the runtime's stream sets it for the run it pumps), so a tool needs no handle of its own."""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar

PROGRESS_LIMIT = 300
"""The most characters of one progress line that are kept (a longer one is cut, with an ellipsis)."""

ProgressSink = Callable[[str, str, str], None]
"""Called with the call's id, its tool's name and the progress line."""

PROGRESS: ContextVar[ProgressSink | None] = ContextVar("tool_progress", default=None)
"""The sink of the run whose task reads this; None outside a run (a progress line then goes nowhere)."""


def report_progress(tool_call_id: str, tool_name: str, message: object) -> None:
    sink = PROGRESS.get()
    if sink is None:
        return
    line = " ".join(str(message).split())
    if len(line) > PROGRESS_LIMIT:
        line = line[: PROGRESS_LIMIT - 1] + "…"
    if line:
        sink(tool_call_id, tool_name, line)
