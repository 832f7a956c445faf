"""One turn at a time per thread, in the order the messages were sent, across replicas.

A message the bot answers is queued in the database before Slack gets its ack (`EventLog.claim`).
Then whichever replica holds the thread's turn (a row in `slack_thread_turns`, kept fresh by a
heartbeat) answers the thread's waiting messages oldest first, by their Slack `ts`. A message that
arrives while the thread is busy waits; the replica that received it tells the thread it is queued
if the wait is long. A replica that crashes leaves its row to go stale; a periodic sweep on every
replica takes such threads over, and also any message whose receiver stopped before starting it.

Turns of different threads run side by side. At most `max_concurrent_turns` of them work at once per
replica (`bot.concurrency.WorkSlots`), so a burst of mentions never keeps the event listener (and
Slack's ack) waiting behind agent work; a turn that waits for the model or a tool gives its slot up
meanwhile, so a slow model does not hold the other threads back (the model's own limit is the
in-flight model requests, see `bot.agent.limit_model_requests`).
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import DatabaseAwayError
from bot.concurrency import WorkSlots
from bot.defaults import DEFAULT_MAX_CONCURRENT_TURNS
from bot.stopping import cut_off

from .stores import QueuedMessage, SlackStores
from .threads import SlackThread
from .translator import DEFAULT_LANGUAGE, N_, Translator, translator

if TYPE_CHECKING:
    from .reader_language import ReaderLanguages

QUEUED_TEXT = N_("Your message is queued: I'll answer it as soon as the messages before it are done.")
INTERRUPTED_TEXT = N_(
    ":warning: I was stopped while answering a message here; whatever it started is picked up again, "
    "but if no answer to it comes, please send it again."
)
"""What the thread is told (catalog message ids: each is said in the conversation's language)."""


class TurnQueue:
    """Takes the turns of queued messages, one per thread at a time; see the module docstring."""

    def __init__(
        self,
        stores: SlackStores,
        client: AsyncWebClient,
        answer: Callable[[QueuedMessage], Awaitable[None]],
        *,
        holder: str,
        reached_agent: Callable[[QueuedMessage], Awaitable[bool]] | None = None,
        answered: Callable[[QueuedMessage], Awaitable[bool]] | None = None,
        max_concurrent_turns: int = DEFAULT_MAX_CONCURRENT_TURNS,
        queued_notice_after: float = 10.0,
        stale_after: float = 30.0,
        sweep_every: float = 5.0,
        logger: logging.Logger | None = None,
        languages: ReaderLanguages | None = None,
    ):
        self.languages = languages
        """The conversations' languages (None: the notices are in English)."""
        self.stores = stores
        self.client = client
        self.answer = answer
        """Takes one message's turn (runs the agent and writes its answer in the thread)."""
        self.reached_agent = reached_agent
        """Whether the runtime took a message whose turn a replica started before it stopped (None: unknown)."""
        self.answered = answered
        """Whether such a message was answered all the same (its run finished; None: never known)."""
        self.max_concurrent_turns = max_concurrent_turns
        self.queued_notice_after = queued_notice_after
        """Seconds a message may wait behind earlier ones before the thread is told it is queued."""
        self.stale_after = stale_after
        """Seconds after its last heartbeat a thread's turn counts as abandoned (its holder crashed)."""
        self._kept_at: dict[str, float] = {}
        """When this replica last refreshed its turn of each thread it holds (`time.monotonic()`)."""
        self.sweep_every = sweep_every
        self._queue_open = True
        self.logger = logger or logging.getLogger("bot.slack")
        self.holder = holder
        """Who this replica is in the thread leases: the agent's `owner`, the one identity of the process."""
        self.slots = WorkSlots(max_concurrent_turns)
        self._tasks: set[asyncio.Task[None]] = set()
        self._turns: set[asyncio.Task[object]] = set()
        """The tasks taking a thread's turns now: the listener of a message (Bolt's task), or a sweep's."""
        self._notices: dict[str, asyncio.Task[None]] = {}
        """The "queued" notice waiting to be checked, by event id: cancelled when the message's turn comes here."""
        self._sweeper: asyncio.Task[None] | None = None

    # --- a message arrived (called by the event listeners, after the ack) -----------------------
    async def arrived(self, thread: SlackThread, event_id: str) -> None:
        """A message of `thread` was queued: take the thread's turns unless another worker has them."""
        if self.queued_notice_after >= 0:
            notice = self._spawn(self._tell_if_still_waiting(thread, event_id))
            self._notices[event_id] = notice
            notice.add_done_callback(lambda _: self._notices.pop(event_id, None))
        await self.take_turns(thread.thread_id)

    async def take_turns(self, thread_id: str) -> None:
        """While this replica can hold `thread_id`, answer its waiting messages oldest first.

        A thread waits for one of the `max_concurrent_turns` work slots before it touches the database, so
        a burst of messages queues here instead of crowding the CPU and the connections that the acks
        need; while its turn waits for the model or a tool, the slot serves another thread. Taking the
        thread starts its first message, and each turn's end starts the next or lets the thread go
        (`SlackStores.take_thread`, `finish_turn`)."""
        turn = asyncio.current_task()
        assert turn is not None, "a turn is taken in a task"
        self._turns.add(turn)
        try:
            await self._take_turns(thread_id)
        finally:
            self._turns.discard(turn)

    async def _take_turns(self, thread_id: str) -> None:
        async with self.slots.slot():
            message = await self.stores.take_thread(
                thread_id, self.holder, stale_after=self.stale_after, language_of=self._language_of
            )
            if message is None:
                return
            self._kept_at[thread_id] = time.monotonic()
            heartbeat = asyncio.create_task(self._keep(thread_id))
            try:
                while message is not None:
                    message = await self._take_turn(message)
            except DatabaseAwayError as exc:
                # longer than the storage waits for it: the turn is not marked done, and its message is taken
                # again (by the sweep, as one a stopped replica started) once the database is back
                self.logger.warning("the database went away during a turn in %s; taken again later: %s", thread_id, exc)
            finally:
                heartbeat.cancel()
                self._kept_at.pop(thread_id, None)
                if message is not None:  # stopped (cancelled, or the database failed) while holding the thread
                    await self._let_go(thread_id)

    async def _take_turn(self, message: QueuedMessage) -> QueuedMessage | None:
        """Answer `message` (its turn is started); the thread's next message, started, or None."""
        if (notice := self._notices.pop(message.event_id, None)) is not None:
            notice.cancel()  # its turn came: it does not wait behind another message
        if message.started and await self._reached_agent(message):
            # started before by a replica that stopped after the runtime took the message: what it started
            # is the runtime's recovery's to continue; answering the message again could run it twice
            self.logger.warning("turn of event %s was interrupted; not taken again", message.event_id)
            following = await self.stores.finish_turn(message, self.holder, language_of=self._language_of)
            if not await self._answered(message):  # "send it again" after the answer would be false
                await self._post(message, INTERRUPTED_TEXT)
            return following
        try:
            await self.answer(message)
        except DatabaseAwayError:
            raise  # not answered, and nothing said: not done (see `_take_turns`)
        except Exception:  # the turn's own failures are told in the thread by `answer`
            self.logger.exception("the turn of event %s failed", message.event_id)
        return await self.stores.finish_turn(message, self.holder, language_of=self._language_of)

    async def _language_of(self, thread_id: str, starter: str) -> str | None:
        """The language a conversation's `starter` reads, recorded with the conversation when its turn starts
        (None: the thread's is known already, or the notices are in English)."""
        return None if self.languages is None else await self.languages.wanted_for(thread_id, starter)

    async def _let_go(self, thread_id: str) -> None:
        """Release the thread of a turn cut off; if the database is still away, its lease goes stale instead."""
        try:
            await self.stores.thread_turns.release(thread_id, self.holder)
        except DatabaseAwayError as exc:
            self.logger.warning("could not let go of %s (its lease goes stale): %s", thread_id, exc)

    async def _reached_agent(self, message: QueuedMessage) -> bool:
        """For a turn a stopped replica started: whether the runtime took the message. When it did not (the
        replica stopped between the ack and the run), the message is answered now, as if just arrived."""
        if self.reached_agent is None:
            return True  # cannot tell: never risk running a request twice
        try:
            reached = await self.reached_agent(message)
        except Exception:  # a database blip: the safe answer
            self.logger.exception("could not tell whether event %s reached the agent", message.event_id)
            return True
        if not reached:
            self.logger.info("turn of event %s was interrupted before the agent took it; taken again", message.event_id)
        return reached

    async def _answered(self, message: QueuedMessage) -> bool:
        if self.answered is None:
            return False
        try:
            return await self.answered(message)
        except Exception:  # a database blip: say what might be needed
            self.logger.exception("could not tell whether event %s was answered", message.event_id)
            return False

    def may_have_lost(self, thread_id: str) -> bool:
        """Whether this replica's turn of `thread_id` went unrefreshed for longer than `stale_after` (it
        stalled, or the database was away): another replica may have taken the turn over meanwhile, and
        shown what this one is about to show (`lost_answers`)."""
        kept = self._kept_at.get(thread_id)
        return kept is not None and time.monotonic() - kept > self.stale_after

    async def _keep(self, thread_id: str) -> None:
        while True:
            await asyncio.sleep(self.stale_after / 3)
            try:
                if not await self.stores.thread_turns.keep(thread_id, self.holder):
                    self.logger.warning("lost the turn of %s to another replica", thread_id)
                    return
                self._kept_at[thread_id] = time.monotonic()
            except Exception:  # a database blip: try again at the next beat
                self.logger.exception("could not refresh the turn of %s", thread_id)

    async def _tell_if_still_waiting(self, thread: SlackThread, event_id: str) -> None:
        await asyncio.sleep(self.queued_notice_after)
        try:
            # only a message behind another one of its thread is queued; one waiting for a work slot
            # (a burst of other threads) is not told anything: its turn comes without a thread's wait
            if not await self.stores.events.waits_behind(event_id):
                return
            text = (await self._words(thread.thread_id, None)).gettext(QUEUED_TEXT)
            await self.client.chat_postMessage(channel=thread.channel, thread_ts=thread.thread_ts, text=text)
        except (SlackApiError, OSError) as exc:
            self.logger.warning("could not tell %s that a message is queued: %s", thread.thread_id, exc)

    async def _words(self, thread_id: str, starter: str | None) -> Translator:
        if self.languages is None:
            return translator(DEFAULT_LANGUAGE)
        return await self.languages.of_thread(thread_id, starter)

    async def _post(self, message: QueuedMessage, text: str) -> None:
        """Say `text` (a catalog message id) in the message's thread."""
        event = message.event
        try:
            said = (await self._words(message.thread_id, event.get("user"))).gettext(text)
            await self.client.chat_postMessage(
                channel=event["channel"], thread_ts=event.get("thread_ts") or event["ts"], text=said
            )
        except (SlackApiError, OSError, KeyError) as exc:
            self.logger.warning("could not post in %s: %s", message.thread_id, exc)

    # --- the sweep, on every replica --------------------------------------------------------
    def start(self) -> None:
        """Start the sweep: at once, then every `sweep_every` seconds while messages are queued or at work; on
        PostgreSQL an idle replica's sweep sleeps until another replica records a message (`memory._notices`),
        or until `stale_after` seconds after this replica recorded one: it takes that message's turn itself,
        and its lease goes stale no sooner."""
        if self._sweeper is None or self._sweeper.done():
            self._sweeper = asyncio.create_task(self._sweep_forever())

    async def sweep(self) -> int:
        """Take the turns of threads whose messages nobody alive is answering; how many threads."""
        found = await self.stores.events.threads_left_waiting(stale_after=self.stale_after, older_than=self.sweep_every)
        self._queue_open = found.open
        for thread_id in found.threads:
            self._spawn(self.take_turns(thread_id))
        return len(found.threads)

    async def _sweep_forever(self) -> None:
        notices = self.stores.storage.notices
        while True:
            began = time.monotonic()
            self._queue_open = True  # unless the sweep says otherwise
            try:
                await self.sweep()
            except Exception:
                self.logger.exception("the sweep of queued messages failed")
            due = self.sweep_every if self._queue_open else None
            await notices.pause(
                self.sweep_every,
                since=began,
                due=due,
                tables=("slack_events",),
                own_after={"slack_events": self.stale_after},
            )

    async def stop_turns(self) -> None:
        """Cut off the turns still at work and wait until they have ended, while the database is still open
        (the shutdown, once its grace is over): a turn cut off in a transaction ends it, and its thread's
        lease goes stale for another replica's sweep or the next start's. Left to `asyncio.run`'s own
        cancellation after the storage had closed, a turn cut off in its last transaction could keep the
        process from exiting (seen under load: `_cancel_all_tasks` waiting, a turn's commit pending)."""
        await cut_off(turn for turn in self._turns if turn is not asyncio.current_task())

    async def close(self) -> None:
        """Stop the sweep and the work this replica started; what is left is swept up later."""
        await cut_off([*self._tasks, *([self._sweeper] if self._sweeper else [])])

    def _spawn(self, work: Awaitable[None]) -> asyncio.Task[None]:
        task = asyncio.ensure_future(work)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)
        return task
