"""The ack path over HTTP: an Events API delivery, or a click, is answered as soon as it is recorded.

Slack wants its 200 within 3 seconds and retries otherwise, and a burst of mentions arrives at once.
Bolt's dispatch (its middleware chain and listener matching) costs about a millisecond per request,
so a burst of hundreds would keep the last ack waiting behind all the others. Here a signed
`event_callback` is checked (signature, duplicate) and recorded with its message (`EventLog.claim`,
batched) and answered at once; Bolt dispatches it afterwards, one request at a time in the background,
without recording it again, and not while other deliveries are being acknowledged (from their check to
their answer, for at most `ACKS_FIRST_FOR` at a time): a burst is acknowledged before its first turn takes
the loop. A signed click (`block_actions`) is recorded the same way (`ClickLog`, see `clicks.py`) and
dispatched after its ack. Everything else (forms, commands, a bad signature, an event whose bot user is
unknown) goes through Bolt as usual.

The record is waited for `RECORD_WITHIN` seconds at most, so Slack hears within its 3 seconds while the
database is away (a restart): an event not recorded by then is answered 503, which Slack retries (the
record, if it lands later, is dispatched then, and the retry is a repeat: 200); a click, which Slack
never sends again, is answered 200, left undone, and its clicker told (`tell_lost`).

`python -m bot serve` runs the ack path in a thread of its own, with its own event loop and database
connections (`intake_thread.py`), so an ack never waits for a turn's work on the bot's loop: there
`acknowledge` is called from that thread with its own `EventLog`, and the dispatch and the wait for quiet
are handed to the bot's loop (the loop `start` was called on).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import threading
from collections.abc import Awaitable, Callable
from typing import Any

from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest
from slack_bolt.response import BoltResponse
from slack_sdk.signature import SignatureVerifier

from .event_reading import kept, team_of, thread_to_answer
from .stores import ClickLog, EventLog

ACKS_FIRST_FOR = 0.25
"""Seconds Bolt's dispatch waits at most, in one busy stretch, for the deliveries being acknowledged: under a
steady stream of events that never lets up, the dispatch then goes on between acks as before."""

RECORD_WITHIN = 2.0
"""Seconds an ack waits for its record at most (Slack waits 3 seconds for the answer)."""

RECORDED = "approval_bot_event_recorded"
"""Set in a request's Bolt context once its event is recorded, so the middleware does not record it again."""

CLICK = "approval_bot_click"
"""Set in a request's Bolt context to the id of its recorded click (`slack_clicks.id`, see `clicks.py`)."""


def is_click(body: Any) -> bool:
    return isinstance(body, dict) and body.get("type") == "block_actions"


def is_form(body: Any) -> bool:
    """A submitted modal (`view_submission`): recorded before its ack like a click (`clicks.py`), but by
    Bolt's middleware, since its listener's ack carries the answer (the modal's errors)."""
    return isinstance(body, dict) and body.get("type") == "view_submission"


def bot_user_of(body: dict[str, Any]) -> str | None:
    """The bot's user ID as Slack states it in the delivery (`authorizations`)."""
    for authorization in body.get("authorizations") or []:
        if isinstance(authorization, dict) and authorization.get("is_bot") and authorization.get("user_id"):
            return authorization["user_id"]
    return None


async def record_event(events: EventLog, body: dict[str, Any], bot_user_id: str | None, team_id: str | None) -> bool:
    """Record the delivery's `event_id`, with its message when the bot answers it; False for a repeat."""
    return await claim_event(events, body, bot_user_id, team_id)


def claim_event(
    events: EventLog,
    body: dict[str, Any],
    bot_user_id: str | None,
    team_id: str | None,
    *,
    late: Callable[[bool], None] | None = None,
) -> asyncio.Future[bool]:
    """`record_event`, queued now (`EventLog.claim_soon`): its future, and `late` told whether it won if the
    future is cancelled before."""
    event = body.get("event") or {}
    team = team_of(body, event, team_id)
    thread = thread_to_answer(event, team, bot_user_id)
    return events.claim_soon(
        body["event_id"],
        team or None,
        thread_id=thread.thread_id if thread else None,
        event=kept(event) if thread else None,
        bot_user_id=bot_user_id,
        late=late,
    )


def _running_loop() -> asyncio.AbstractEventLoop | None:
    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _first(request: AsyncBoltRequest, name: str) -> str:
    values = request.headers.get(name) or [""]
    return values[0] if isinstance(values, (list, tuple)) else str(values)


class EventIntake:
    """Acknowledges Events API deliveries before Bolt sees them (see the module docstring)."""

    def __init__(
        self,
        app: AsyncApp,
        events: EventLog,
        clicks: ClickLog,
        signing_secret: str,
        *,
        holder: str,
        tell_lost: Callable[[dict[str, Any]], Awaitable[None]],
        logger: logging.Logger,
    ):
        self.app = app
        self.events = events
        self.clicks = clicks
        self.holder = holder
        """Who carries a recorded click out (the agent's `owner`)."""
        self.tell_lost = tell_lost
        """Tells a clicker their click could not be recorded (on the bot's loop; `clicks.tell_clicker`)."""
        self.verifier = SignatureVerifier(signing_secret)
        self.logger = logger
        self._waiting: asyncio.Queue[AsyncBoltRequest] | None = None
        self._dispatcher: asyncio.Task[None] | None = None
        self._recording = 0
        """Deliveries being acknowledged now: from their check to their answer (which waits for the claim's
        commit)."""
        self._quiet = asyncio.Event()
        """Set while none is (an object of the bot's loop)."""
        self._quiet.set()
        self._counting = threading.Lock()
        """Guards `_recording` and `_handed` (the intake may run on a thread of its own)."""
        self._handed: list[AsyncBoltRequest] = []
        """Recorded deliveries handed to the bot's loop for their dispatch, not yet queued there."""
        self._telling: set[asyncio.Task[None]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None
        """The bot's loop, where Bolt dispatches (`start`); None: the loop `acknowledge` runs on."""

    def start(self) -> None:
        """Dispatch on the running loop from now on, whichever thread acknowledges."""
        self._loop = asyncio.get_running_loop()

    async def acknowledge(
        self, request: AsyncBoltRequest, *, events: EventLog | None = None, clicks: ClickLog | None = None
    ) -> BoltResponse | None:
        """The response for a signed event delivery or click, once recorded (in `events` and `clicks`, this
        loop's own, or the app's); None: let Bolt handle the request."""
        body = request.body
        if isinstance(body, dict) and body.get("type") == "event_callback" and body.get("event_id"):
            bot_user_id = bot_user_of(body)
            if bot_user_id is None or not self._signed(request):
                return None  # Bolt answers a bad signature (401) and finds the bot user itself
            return await self._acknowledge_event(request, events or self.events, bot_user_id)
        if is_click(body) and self._signed(request):
            return await self._acknowledge_click(request, clicks or self.clicks)
        return None

    def _signed(self, request: AsyncBoltRequest) -> bool:
        return self.verifier.is_valid(
            request.raw_body, _first(request, "x-slack-request-timestamp"), _first(request, "x-slack-signature")
        )

    async def _acknowledge_event(self, request: AsyncBoltRequest, events: EventLog, bot_user_id: str) -> BoltResponse:
        body = request.body
        self._count(+1)  # until it is answered: the dispatch waits for the acks of a burst
        try:
            late = functools.partial(self._recorded_late, request=request)
            try:
                async with asyncio.timeout(RECORD_WITHIN):
                    # cancelled on time out: its outcome then comes to `_recorded_late`
                    won = await claim_event(events, body, bot_user_id, None, late=late)
            except Exception as exc:  # noqa: BLE001 - the database away or slow: Slack sends the event again
                self.logger.warning(
                    "event %s not recorded within %.0f s (%s); answered 503 for Slack to send it again",
                    body["event_id"], RECORD_WITHIN, type(exc).__name__ if str(exc) == "" else exc,
                )  # fmt: skip
                return BoltResponse(status=503, body="not recorded yet: please send it again")
        finally:
            self._count(-1)
        if not won:
            self.logger.info("event %s already handled; skipped", body["event_id"])
            return BoltResponse(status=200, body="")
        request.context[RECORDED] = True
        self._dispatch_later(request)
        return BoltResponse(status=200, body="")

    def _recorded_late(self, won: bool, *, request: AsyncBoltRequest) -> None:
        """An event answered 503 whose record landed after all: dispatched now (Slack's retry is a repeat)."""
        if not won:
            return
        self.logger.info("event %s recorded late; dispatched", request.body["event_id"])
        request.context[RECORDED] = True
        self._dispatch_later(request)

    async def _acknowledge_click(self, request: AsyncBoltRequest, clicks: ClickLog) -> BoltResponse:
        body = request.body
        recording = asyncio.ensure_future(clicks.record(body, holder=self.holder))
        try:
            async with asyncio.timeout(RECORD_WITHIN):
                click_id = await asyncio.shield(recording)
        except Exception as exc:  # noqa: BLE001 - the database away or slow: the clicker is told, nothing done
            self.logger.warning(
                "click by %s not recorded within %.0f s (%s); not carried out, the clicker told",
                (body.get("user") or {}).get("id"), RECORD_WITHIN, type(exc).__name__ if str(exc) == "" else exc,
            )  # fmt: skip
            recording.add_done_callback(lambda done: self._click_recorded_late(done, clicks))
            self._on_bot_loop(self._tell_lost, body)
            return BoltResponse(status=200, body="")
        request.context[CLICK] = click_id
        self._dispatch_later(request)
        return BoltResponse(status=200, body="")

    def _click_recorded_late(self, recording: asyncio.Future[str], clicks: ClickLog) -> None:
        """A click its clicker was told is lost, recorded after all: marked done, so no sweep carries it out."""
        if recording.cancelled() or recording.exception() is not None:
            return
        asyncio.ensure_future(clicks.done(recording.result()))

    def _tell_lost(self, body: dict[str, Any]) -> None:
        task = asyncio.ensure_future(self.tell_lost(body))
        self._telling.add(task)
        task.add_done_callback(self._telling.discard)

    def _count(self, change: int) -> None:
        with self._counting:
            self._recording += change
            if self._recording == (1 if change > 0 else 0):
                self._on_bot_loop(self._quiet.clear if change > 0 else self._quiet.set)

    def _on_bot_loop(self, work: Callable[..., None], *args: Any) -> None:
        loop = self._loop
        if loop is None or loop is _running_loop():
            work(*args)
        else:
            loop.call_soon_threadsafe(work, *args)

    def _dispatch_later(self, request: AsyncBoltRequest) -> None:
        with self._counting:
            self._handed.append(request)
            first = len(self._handed) == 1
        if first:  # the bot's loop takes the others with it: woken once, not once per delivery
            self._on_bot_loop(self._queue_dispatch)

    def _queue_dispatch(self) -> None:
        with self._counting:
            handed, self._handed = self._handed, []
        if self._waiting is None:
            self._waiting = asyncio.Queue()
        for request in handed:
            self._waiting.put_nowait(request)
        if self._dispatcher is None or self._dispatcher.done():
            self._dispatcher = asyncio.create_task(self._dispatch_waiting())

    async def _dispatch_waiting(self) -> None:
        # one at a time, and none while deliveries are being recorded: a burst is acknowledged first
        assert self._waiting is not None
        loop = asyncio.get_running_loop()
        busy_since: float | None = None
        while not self._waiting.empty():
            if self._quiet.is_set():
                busy_since = None
            else:
                busy_since = busy_since if busy_since is not None else loop.time()
                with contextlib.suppress(TimeoutError):
                    async with asyncio.timeout_at(busy_since + ACKS_FIRST_FOR):
                        await self._quiet.wait()
            request = self._waiting.get_nowait()
            try:
                await self.app.async_dispatch(request)
            except Exception:
                self.logger.exception("dispatching event %s failed", request.body.get("event_id"))

    async def close(self) -> None:
        if self._dispatcher is not None:
            self._dispatcher.cancel()
            await asyncio.gather(self._dispatcher, return_exceptions=True)
