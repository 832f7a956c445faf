"""A tool's dry run (`preview=` on `create_tool`): run contained, once per call, and kept as the databases
store it.

The preview is tool code: it runs through `run_contained` (a time bound, nothing it raises leaves it), and
what a failed one says is shown through the run's `Redactor` (the full text goes to the log only). Before
a step's previews run, the driver records which calls' previews start (`RunStorage.mark_previews_started`);
a process that takes the run over after a crash meets those calls again and shows `STOPPED` instead of
running them twice.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

from bot.concurrency import waiting
from memory import StoredToolCall
from tools import JsonValueError, Tool, ToolContext, read_json, to_jsonable

from ._contained import run_contained

log = logging.getLogger(__name__)

PREVIEW_LIMIT = 8000
"""Characters of a preview's result kept (as JSON); a longer one is kept cut, as text."""
ERROR_LIMIT = 500
"""Characters of a failed preview's (masked) error kept."""
STOPPED = "the bot stopped while this preview ran, so it is not run again (a preview runs once per call)"


async def run_preview(
    tool: Tool, row: StoredToolCall, context: ToolContext, *, redact: Callable[[str], str]
) -> dict[str, Any]:
    """What `tool`'s preview says of the call `row`, as stored: {"ok": true, "result": ...} or {"ok": false,
    "error": "..."}. Never raises, except when the caller itself is cancelled."""
    async with waiting():  # a preview's work is a wait for the turn: its work slot serves another
        outcome = await run_contained(
            lambda: tool.preview(tool.parse_args(row.args), context),  # type: ignore[misc]
            tool.preview_timeout,
        )
    if outcome.timed_out:
        return {"ok": False, "error": f"the preview did not answer within {tool.preview_timeout:g} s"}
    if outcome.error is not None:
        text = error_text(outcome.error)
        log.warning("preview of %s failed in run %s (call %s): %s", row.tool_name, row.run_id, row.tool_call_id, text)
        return {"ok": False, "error": redact(text)[:ERROR_LIMIT]}
    return storable({"ok": True, "result": to_jsonable(outcome.value)})


def error_text(exc: BaseException) -> str:
    """`Type: message`, or the type alone for an exception without a message."""
    message = str(exc)
    return f"{type(exc).__name__}: {message}" if message else type(exc).__name__


def storable(preview: dict[str, Any]) -> dict[str, Any]:
    """`preview` as the databases store it: finite numbers, clean text, and not too much of it."""
    try:
        text = json.dumps(preview, ensure_ascii=False, default=str)
        if len(text) > PREVIEW_LIMIT:
            shown = preview.get("result")
            shown = shown if isinstance(shown, str) else json.dumps(shown, ensure_ascii=False, default=str)
            text = json.dumps({"ok": True, "result": shown[: PREVIEW_LIMIT // 2] + " …"}, ensure_ascii=False)
        stored: dict[str, Any] = read_json(text)
        return stored
    except (JsonValueError, ValueError):
        return {"ok": False, "error": "the preview returned something that is not JSON"}


def preview_line(preview: Any) -> str | None:
    """The audit trail's word on a call's preview (on its `requested` line); None without one."""
    if not isinstance(preview, dict):
        return None
    if not preview.get("ok"):
        return f"preview failed: {preview.get('error')}"[:500]
    result = preview.get("result")
    text = result if isinstance(result, str) else json.dumps(result, ensure_ascii=False, default=str)
    return f"preview: {text}"[:500]
