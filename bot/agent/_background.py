"""Runs that go on without a caller (an expired call, a recovered run, a live question answered through
another process) are handed to the front end's `on_background_stream` hook."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from typing import Any

from ._stream import AgentStream

log = logging.getLogger(__name__)

_BACKGROUND: set[asyncio.Task[Any]] = set()  # strong references to the hooks' tasks


def in_background(hooks: Mapping[str, Any], stream: AgentStream) -> None:
    """Hand a run that goes on without a caller to the front end's `on_background_stream` hook."""
    hook = hooks.get("on_background_stream")
    if hook is None:
        return
    try:
        outcome = hook(stream)
        if asyncio.iscoroutine(outcome):
            task = asyncio.get_running_loop().create_task(outcome)
            _BACKGROUND.add(task)
            task.add_done_callback(_BACKGROUND.discard)
    except Exception:  # noqa: BLE001 - the run goes on whether or not a front end shows it
        log.exception("on_background_stream failed for run %s", stream.run_id)
