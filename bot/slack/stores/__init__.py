"""The Slack adapter's reads and writes of its own tables (`../tables.py`), one store per table.

- `EventLog` (`events.py`): handled events (the dedup of deliveries) and the messages queued for their turn;
- `ThreadTurns` (`thread_turns.py`): which replica holds the turn of a thread (a lease with a heartbeat);
- `Conversations` (`conversations.py`): the threads the bot takes part in;
- `WaitingCallMessages` (`waiting_call_messages.py`): the messages that show waiting calls, and their copies;
- `HomeViews` (`home_views.py`): who opened the App Home, and what was last published for them;
- `AnswerFeedback` (`answer_feedback.py`): people's thumbs up / down on the agent's answers;
- `ClickLog` (`clicks.py`): button clicks recorded before their ack, until they are carried out.

Each method is one short transaction; `SlackStores` makes one transaction of a turn's writes to the
leases, the queue and the conversation (`take_thread`), and one statement of a turn's end (`finish_turn`). The tables are migrated once, when
the bot starts (`prepare_slack_tables`), never on the way of a call.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from datetime import timedelta

from sqlalchemy.ext.asyncio import AsyncConnection

from memory import Storage, retried_while_away

from ..migrations import SCHEMA
from ..threads import thread_of_message
from .answer_feedback import AnswerFeedback
from .clicks import ClickLog
from .conversations import Conversations
from .events import ClaimWriter, EventLog, QueuedMessage
from .home_views import HomeViews
from .thread_turns import ThreadTurns
from .waiting_call_messages import WaitingCallMessages


async def prepare_slack_tables(storage: Storage) -> None:
    """Bring the runtime's and the adapter's tables up to date (cheap when they are: checked once per
    process). The bot does this at start, before the stores are used."""
    await storage.migrate(SCHEMA)


@dataclass(frozen=True, kw_only=True)
@retried_while_away
class SlackStores:
    """The adapter's stores, one per table, on one storage."""

    events: EventLog
    thread_turns: ThreadTurns
    conversations: Conversations
    messages: WaitingCallMessages
    home_views: HomeViews
    feedback: AnswerFeedback
    clicks: ClickLog

    @classmethod
    def on(cls, storage: Storage, *, keep_events: timedelta = timedelta(days=1)) -> SlackStores:
        return cls(
            events=EventLog(storage, keep_events=keep_events),
            thread_turns=ThreadTurns(storage),
            conversations=Conversations(storage),
            messages=WaitingCallMessages(storage),
            home_views=HomeViews(storage),
            feedback=AnswerFeedback(storage),
            clicks=ClickLog(storage),
        )

    @property
    def storage(self) -> Storage:
        return self.events.storage

    # --- a thread's turns: the lease and the queue in one transaction each ----------------------
    async def take_thread(self, thread_id: str, holder: str, *, stale_after: float) -> QueuedMessage | None:
        """Take `thread_id`'s turn for `holder` (`ThreadTurns.take`) and start its oldest waiting message,
        in one transaction. None if another holder has the thread, or if no message waits (the lease is
        let go in the same transaction)."""
        async with self.storage.transaction() as connection:
            if not await self.thread_turns.take(thread_id, holder, stale_after=stale_after, connection=connection):
                return None
            return await self._start_next_or_let_go(connection, thread_id, holder)

    async def finish_turn(self, message: QueuedMessage, holder: str) -> QueuedMessage | None:
        """Mark `message`'s turn done and start the next waiting message of its thread; None if no message
        waits (the lease is let go with the mark). Mostly none waits: the mark and the lease's release are
        one statement that commits by itself (one round trip on PostgreSQL; a second try of it, after a lost
        connection, finds the lease gone: None too), and only a lease kept (a message waits) starts a
        transaction that reads the queue.

        None too if the lease is no longer `holder`'s: this replica stalled past its heartbeat and another
        took the thread over (`ThreadTurns.take`), whose turns the thread's next messages are now. The
        check refreshes the lease, so (PostgreSQL: with its row lock) no one takes it over before this
        transaction has started the next message."""
        async with self.storage.statement(idempotent=True) as connection:
            _, released = await self.storage.dialect.together(
                connection,
                self.events.finishing(message.event_id),
                self.thread_turns.releasing_if_idle(message.thread_id, holder, besides=message.event_id),
            )
        if released:
            return None
        async with self.storage.transaction() as connection:
            if not await self.thread_turns.keep(message.thread_id, holder, connection=connection):
                return None
            return await self._start_next_or_let_go(connection, message.thread_id, holder)

    async def _start_next_or_let_go(
        self, connection: AsyncConnection, thread_id: str, holder: str
    ) -> QueuedMessage | None:
        while (message := await self.events.start_next(thread_id, connection=connection)) is None:
            if await self.thread_turns.release_if_idle(thread_id, holder, connection=connection):
                return None
            # kept: a message was queued after the look (PostgreSQL: committed meanwhile); the lease is
            # this holder's (taken or kept in this transaction), but never loop on a queue found empty
            if not await self.events.any_queued(thread_id, connection=connection):
                return None
        if not message.starts_conversation or "user" not in message.event:
            return message  # (every queued message has its user: `is_from_a_person`)
        # recorded with the turn's start, not in a transaction of its own
        thread = thread_of_message(message.event, message.team_id)
        conversation, new = await self.conversations.start(thread, message.event["user"], connection=connection)
        return replace(message, conversation=conversation, new_conversation=new)


__all__ = [
    "AnswerFeedback",
    "ClaimWriter",
    "ClickLog",
    "Conversations",
    "EventLog",
    "HomeViews",
    "QueuedMessage",
    "SlackStores",
    "ThreadTurns",
    "WaitingCallMessages",
    "prepare_slack_tables",
]
