"""Waiting in a test for something the bot does in its own tasks or processes, polled until it holds."""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable
from typing import Any


async def until(condition: Callable[[], Any], timeout: float = 10.0, *, every: float = 0.02, what: str = "") -> Any:
    """What `condition()` returns once it is truthy (`condition` may be async), asked every `every`
    seconds; fails the test after `timeout` seconds, naming `what` it waited for."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        value = condition()
        if inspect.isawaitable(value):
            value = await value
        if value:
            return value
        assert loop.time() < deadline, f"timed out waiting for {what or 'the condition'}"
        await asyncio.sleep(every)
