"""How `python -m bot serve|socket|dev` stops: Ctrl-C or SIGTERM cancels the work, its cleanup runs, and
a stop that takes long says what it waits for.

A stop has two bounds. After `SLOW_STOP` seconds one warning names what is still at work: each asyncio
task with the chain of calls it waits in, and the threads still alive. After `hard_deadline` seconds a
watchdog thread prints every thread's stack and exits anyway (code 0): nothing is lost by that, what was
at work is taken over by the recovery of the next start. A stop bounded under `SLOW_STOP` (`dev`'s, which
leaves what was at work to its next start within 2 s) ends at its bound without either.
"""

from __future__ import annotations

import asyncio
import faulthandler
import logging
import os
import signal
import sys
import threading
from collections.abc import Coroutine, Iterable
from typing import Any

log = logging.getLogger("bot.stopping")

SLOW_STOP = 5.0
"""Seconds after Ctrl-C or SIGTERM at which a stop still under way is reported (`still_at_work`)."""


def run_until_stopped(work: Coroutine[Any, Any, None], *, hard_deadline: float, slow_after: float = SLOW_STOP) -> None:
    """Run `work` until Ctrl-C or SIGTERM (`docker stop`, process managers). Both cancel it, so its
    cleanup runs; a KeyboardInterrupt raised from a signal handler could land anywhere, even in a
    `__del__` that swallows it, and the bot would never stop.

    Both also start the two bounds of the module docstring: the report after `slow_after` seconds and
    the watchdog after `hard_deadline` (its cleanup stuck, e.g. a database connection that never
    finishes closing, or a task whose cancellation a library swallowed and that went on sleeping)."""

    def stop(task: asyncio.Task[Any] | None) -> None:
        telling = slow_after < hard_deadline  # `dev`'s stop, bounded at 2 s, ends without a word
        watchdog = threading.Timer(hard_deadline, _exit_anyway, args=(hard_deadline, telling))
        watchdog.daemon = True
        watchdog.start()
        if telling:
            asyncio.get_running_loop().call_later(slow_after, _report_slow_stop, slow_after)
        if task is not None:
            task.cancel()

    async def main() -> None:
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop, asyncio.current_task())
        try:
            await work
        except asyncio.CancelledError:
            pass

    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass


def _report_slow_stop(after: float) -> None:
    lines = still_at_work()
    log.warning("still stopping after %gs; at work:%s", after, "".join(f"\n  {line}" for line in lines) or " nothing")


def _exit_anyway(after: float, telling: bool) -> None:
    if telling:
        log.warning("the stop took more than %gs: exiting anyway; the next start recovers what was at work", after)
        faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    os._exit(0)


def still_at_work() -> list[str]:
    """One line per asyncio task of the running loop (but the caller's) with the calls it waits in, and
    one naming the other threads still alive."""
    lines = sorted(f"task {task.get_name()}: {awaiting(task)}" for task in _other_tasks())
    others = [thread.name for thread in threading.enumerate() if thread is not threading.current_thread()]
    if others:
        lines.append(f"threads: {', '.join(sorted(others))}")
    return lines


def _other_tasks() -> list[asyncio.Task[Any]]:
    """The tasks of the running loop but the caller's."""
    current = asyncio.current_task()
    return [task for task in asyncio.all_tasks() if task is not current]


def awaiting(task: asyncio.Task[Any]) -> str:
    """The chain of calls `task` waits in, outermost first, and where the innermost one stands:
    `_run -> _serve -> stop (bot/slack/intake_thread.py:109)`."""
    names: list[str] = []
    where = ""
    step: Any = task.get_coro()
    while step is not None:
        frame = getattr(step, "cr_frame", None) or getattr(step, "gi_frame", None) or getattr(step, "ag_frame", None)
        if frame is None:  # a Future, or a coroutine that has finished
            if names:
                names[-1] += " on a future" if type(step).__name__ == "FutureIter" else f" on {type(step).__name__}"
            break
        names.append(frame.f_code.co_name)
        where = f"{_shown_path(frame.f_code.co_filename)}:{frame.f_lineno}"
        step = getattr(step, "cr_await", None) or getattr(step, "gi_yieldfrom", None) or getattr(step, "ag_await", None)
    return f"{' -> '.join(names)} ({where})" if names else repr(task.get_coro())


def _shown_path(path: str) -> str:
    """`path` from the package's parent folder (`bot/cli.py`), or as it is for the libraries'."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    return os.path.relpath(path, root) if path.startswith(root + os.sep) and "site-packages" not in path else path


async def cut_off(tasks: Iterable[asyncio.Future[Any]]) -> None:
    """Cancel `tasks` and wait until each has ended (however it ended)."""
    tasks = list(tasks)
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def cut_off_the_rest() -> None:
    """Cancel every other task of the running loop and wait until each has ended: the last step of a stop
    before the storage closes, for whatever the stops before it left (`asyncio.run` would cancel them only
    after the storage had closed, and a task cut off in its last transaction then kept the process from
    ever exiting)."""
    await cut_off(_other_tasks())
