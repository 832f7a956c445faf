"""Faults a test can script into the emulated Web API: what Slack and the network do on a bad day.

Each fault applies to the next `times` calls of one method, in the order they were scripted:
- an HTTP status (429 with Retry-After, 500, 503): the call does nothing, the answer is that status;
- a Slack error (`{"ok": false, "error": ...}` with HTTP 200): the call does nothing;
- a delay: the call is answered after `seconds` (then carried out as usual);
- a hold: the call waits until the test releases it (then carried out as usual), also when the
  client has gone meanwhile: a request Slack received before its sender died still takes effect;
- a dropped connection: the call is carried out (the message exists in the workspace) and the
  connection is then closed without an answer, as when the network fails on the way back;
  with `after=False` the connection is dropped before anything is done.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass


@dataclass(kw_only=True)
class Fault:
    """One scripted misbehaviour of a method."""

    method: str
    times: int = 1
    """How many more calls of `method` it applies to."""
    status: int | None = None
    """Answer with this HTTP status instead of carrying the call out."""
    retry_after: int = 0
    """The Retry-After header of a 429."""
    error: str | None = None
    """Answer `{"ok": false, "error": error}` instead of carrying the call out."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    drop: bool = False
    """Close the connection instead of answering."""
    after: bool = True
    """With `drop`: carry the call out first (True), or drop before doing anything (False)."""
    hold: Hold | None = None
    """Wait until this hold is released before going on."""

    @property
    def label(self) -> int | str:
        """How `SlackWebApi.failed` records the fault: the HTTP status, the Slack error, or `dropped`."""
        if self.drop:
            return "dropped"
        if self.status is not None:
            return self.status
        if self.error is not None:
            return self.error
        return "delayed"


class Hold:
    """A call kept waiting (see `SlackWebApi.hold`): `arrived` once the call came, `release()` lets it go on."""

    def __init__(self) -> None:
        self.arrived = asyncio.Event()
        self.released = asyncio.Event()

    def release(self) -> None:
        self.released.set()


class Faults:
    """The faults waiting to happen, per method."""

    def __init__(self) -> None:
        self._queued: dict[str, list[Fault]] = {}

    def add(self, fault: Fault) -> None:
        if fault.times < 1:
            raise ValueError("a fault applies to at least one call (times >= 1)")
        self._queued.setdefault(fault.method, []).append(fault)

    def take(self, method: str) -> Fault | None:
        """The fault for this call of `method`, if one is scripted (and count it used)."""
        queued = self._queued.get(method)
        if not queued:
            return None
        fault = queued[0]
        fault.times -= 1
        if fault.times <= 0:
            queued.pop(0)
        return fault

    def clear(self) -> None:
        self._queued.clear()
