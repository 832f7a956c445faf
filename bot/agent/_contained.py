"""Running tool code the bot does not control (a preview, an undo) so that nothing it does stops the bot.

`run_contained` runs it in a task of its own, bounded in time, and hands back what it returned or what
it raised as a value: any `BaseException` (`SystemExit`, `KeyboardInterrupt`, a `CancelledError` the
code raised by itself, `GeneratorExit`, exception groups) stays inside. asyncio lets `SystemExit` and
`KeyboardInterrupt` out of the event loop, so they are caught in the task, before asyncio sees them.

A cancellation of the caller (a shutdown) is no failure of the tool code: it cancels the code's task too
and goes on up, as any cancellation does. What the code cannot be kept from is blocking the event loop
without awaiting, or ending the process itself (`os._exit`); the runtime's durable marks cover the latter.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

_RUNNING: set[asyncio.Task[Any]] = set()
"""The tasks of code that was cut off and has not ended yet: asyncio keeps only weak references."""


@dataclass(frozen=True, kw_only=True)
class Contained:
    """How contained code ended: it returned `value`, raised `error`, or did not end in time."""

    value: Any = None
    error: BaseException | None = None
    """What it raised (never re-raised by the runtime); None when it returned or timed out."""
    timed_out: bool = False

    @property
    def ok(self) -> bool:
        return self.error is None and not self.timed_out


async def run_contained(code: Callable[[], Awaitable[Any]], timeout: float) -> Contained:
    """Run `code()` in a task of its own for at most `timeout` seconds (see the module docstring). Only a
    cancellation of the caller's own task leaves this function."""
    task = asyncio.get_running_loop().create_task(_boxed(code), name="contained tool code")
    _RUNNING.add(task)
    task.add_done_callback(_RUNNING.discard)
    try:
        done, _ = await asyncio.wait({task}, timeout=timeout)
    except asyncio.CancelledError:  # the caller is cancelled (a shutdown): the code goes with it
        task.cancel()
        raise
    if not done:
        task.cancel()  # not awaited: code that ignores the cancellation must not hold the caller
        return Contained(timed_out=True)
    if task.cancelled():
        if asyncio.current_task().cancelling():  # type: ignore[union-attr]  # a shutdown cancelled both
            raise asyncio.CancelledError
        # the code cancelled its own task (`asyncio.current_task().cancel()`): a failure like any other
        return Contained(error=asyncio.CancelledError("the tool code cancelled its own task"))
    return task.result()


async def _boxed(code: Callable[[], Awaitable[Any]]) -> Contained:
    try:
        return Contained(value=await code())
    except asyncio.CancelledError as exc:
        if asyncio.current_task().cancelling():  # type: ignore[union-attr]  # ours: the time ran out, or a shutdown
            raise
        return Contained(error=exc)  # the code raised it by itself: a failure like any other
    except BaseException as exc:  # noqa: BLE001 - SystemExit, KeyboardInterrupt, GeneratorExit...: the code's
        return Contained(error=exc)
