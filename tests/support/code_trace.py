"""Which of the project's files run while a test does one thing, and for what: the click itself, or the
run it lets go on (`CodeTrace`). ARCHITECTURE.md's count of the files an Approve click passes through
is checked against it (`tests/slack/test_approve_trace.py`)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parents[2]

PACKAGES = ("bot", "memory", "tools")
"""The project's code: what a trace counts."""
LEFT_OUT = ("bot/slack_emulator", "bot/demo")
"""Slack's side of the test (the emulation of its Web API) and the demo agent's tools: not the bot's path."""

CLICK, RELAY, RUN, ELSEWHERE = "click", "relay", "run", "elsewhere"
"""What a call was made for: the request of the click (its ack, its checks, the decision, the message
brought up to date) and the tasks it started; the adapter relaying the run into the thread (from
`decisions.go_on` on, in the click's task); the run's own task (`AgentStream`'s pump, a task named
"run ...": the tool the decision lets run, the model asked again); anything else (tasks that were there
before, the Slack emulation's server)."""


class CodeTrace:
    """The project's functions called while `running()`, by file and by what they were called for.

    A task counts for what the task that created it counted for when it did (a loop task factory notes
    it), so the tasks the click starts (its listener, the Home's refresh) count as the click. Only the event
    loop's thread is traced (`sys.setprofile` is per thread): the database driver's thread runs
    `memory/_sqlite_driver.py` alone, which shows on the loop's thread too."""

    def __init__(self, entry: str):
        self.entry = entry
        """The qualified name of the function whose first call starts the click (the HTTP handler)."""
        self.calls: dict[str, dict[str, set[str]]] = {kind: {} for kind in (CLICK, RELAY, RUN, ELSEWHERE)}
        self._started_for: dict[asyncio.Task[Any], str] = {}
        self._click: asyncio.Task[Any] | None = None
        self._relaying: set[asyncio.Task[Any]] = set()
        self._prefixes = tuple(f"{ROOT / package}/" for package in PACKAGES)
        self._left_out = tuple(f"{ROOT / folder}/" for folder in LEFT_OUT)

    def files(self, *kinds: str) -> set[str]:
        """The files (relative to the checkout) with a call for any of `kinds`."""
        return {file for kind in kinds for file in self.calls[kind]}

    @contextmanager
    def running(self) -> Iterator[CodeTrace]:
        loop = asyncio.get_running_loop()
        factory = loop.get_task_factory()

        def noting_what_for(loop: asyncio.AbstractEventLoop, coro: Any, **options: Any) -> asyncio.Task[Any]:
            task = factory(loop, coro, **options) if factory else asyncio.Task(coro, loop=loop, **options)
            self._started_for[task] = self._kind_of(asyncio.current_task(loop))
            return task

        loop.set_task_factory(noting_what_for)
        sys.setprofile(self._profile)
        try:
            yield self
        finally:
            sys.setprofile(None)
            loop.set_task_factory(factory)

    async def settled(self, timeout: float = 30) -> None:
        """Wait until the click's tasks (the click's own, those it started, the run's) have all ended."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while True:
            ours = [task for task, kind in self._started_for.items() if kind != ELSEWHERE]
            pending = [task for task in [self._click, *ours] if task is not None and not task.done()]
            if not pending:
                return
            if loop.time() >= deadline:
                raise AssertionError(f"still at work: {sorted(task.get_name() for task in pending)}")
            await asyncio.wait(pending, timeout=deadline - loop.time())

    def _profile(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event != "call":
            return
        path = frame.f_code.co_filename
        if not path.startswith(self._prefixes) or path.startswith(self._left_out):
            return
        name = frame.f_code.co_qualname
        task = asyncio.current_task()
        if self._click is None and name == self.entry:
            self._click = task
        if name == "go_on" and path.endswith("bot/slack/decisions.py"):
            self._relaying.add(task)  # from here on this task relays the run
        kind = self._kind_of(task)
        self.calls[kind].setdefault(str(Path(path).relative_to(ROOT)), set()).add(name)

    def _kind_of(self, task: asyncio.Task[Any] | None) -> str:
        if task is None:
            return ELSEWHERE
        if task.get_name().startswith("run "):
            return RUN
        if task in self._relaying:
            return RELAY
        if task is self._click:
            return CLICK
        return self._started_for.get(task, ELSEWHERE)
