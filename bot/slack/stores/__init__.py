"""The Slack adapter's reads and writes of its own tables (`../tables.py`), one store per table.

- `EventLog` (`events.py`): handled events (the dedup of deliveries) and the messages queued for their turn;
- `ThreadTurns` (`thread_turns.py`): which replica holds the turn of a thread (a lease with a heartbeat);
- `Conversations` (`conversations.py`): the threads the bot takes part in;
- `WaitingCallMessages` (`waiting_call_messages.py`): the messages that show waiting calls, and their copies;
- `HomeViews` (`home_views.py`): who opened the App Home, and what was last published for them;
- `AnswerFeedback` (`answer_feedback.py`): people's thumbs up / down on the agent's answers;
- `ClickLog` (`clicks.py`): button clicks recorded before their ack, until they are carried out.

Each method is one short transaction, most of them one statement that commits by itself (one round trip on
PostgreSQL); `SlackStores` strings a turn's steps together (`take_thread`, `finish_turn`). The tables are migrated once, when
the bot starts (`prepare_slack_tables`), never on the way of a call.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from datetime import timedelta

from sqlalchemy import select

from memory import IN_FORCE, LIVE_GRANTS_OF_AGENT, Delegation, Grant, OneRead, Storage, retried_while_away

from ..migrations import SCHEMA
from ..tables import HomeViewRow, ToolCallMessageRow
from ..threads import thread_of_message
from .answer_feedback import AnswerFeedback
from .clicks import ClickLog
from .conversations import Conversations
from .events import ClaimWriter, EventLog, QueuedMessage
from .home_views import HomeViews
from .thread_turns import ThreadTurns
from .waiting_call_messages import OPEN_APPROVAL, WaitingCallMessages, one_per_call


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

    # --- the App Homes: what they show, in one read -------------------------------------------------
    async def home_read(self, agent_id: str, *, homes: bool) -> HomeRead:
        """What the App Homes show alike (`HomeRead`), in one statement: every open approval
        (`WaitingCallMessages.open_approvals`), `agent_id`'s live grants (`GrantStore.live`), the delegations
        in force (`DelegationStore.in_force`); with `homes`, also every user who opened the App Home with the
        digest last published for them (`HomeViews.digests`): what a refresh of the Homes reads first."""
        read = _HOME_READ if homes else _SHOWN_ALIKE
        async with self.storage.read() as connection:
            parts = await read.rows(connection, {"b_agent": agent_id, "b_now": self.storage.clock.now()})
        approvals = sorted((ToolCallMessageRow(**row) for row in parts["approvals"]), key=lambda row: row.created_at)
        return HomeRead(
            homes={row["user_id"]: row["digest"] for row in parts.get("homes", ())},
            approvals=one_per_call(approvals),
            grants=sorted((Grant(**row) for row in parts["grants"]), key=lambda g: (g.expires_at, g.id)),
            delegations=sorted((Delegation(**row) for row in parts["delegations"]), key=lambda d: (d.ends_at, d.id)),
        )

    # --- a thread's turns: each step one statement that commits by itself --------------------------
    async def take_thread(
        self, thread_id: str, holder: str, *, stale_after: float, language_of: LanguageOf | None = None
    ) -> QueuedMessage | None:
        """Take `thread_id`'s turn for `holder` (`ThreadTurns.take`) and start its oldest waiting message
        (`_start_next`), in one statement on PostgreSQL (`EventLog.take_and_start`). None if another holder
        has the thread, or if no message waits (the lease is then let go). `language_of`: see `_start_next`."""
        if self.storage.dialect.is_sqlite:  # no INSERT or UPDATE inside a WITH; no round trips to save either
            if not await self.thread_turns.take(thread_id, holder, stale_after=stale_after):
                return None
            return await self._start_next(thread_id, holder, language_of)
        took, message = await self.events.take_and_start(
            self.thread_turns.taking, thread_id, holder, stale_after=stale_after
        )
        if not took:
            return None
        if message is None:  # none waited: let go (unless one came meanwhile)
            return await self._start_next(thread_id, holder, language_of)
        return await self._with_conversation(message, language_of)

    async def finish_turn(
        self, message: QueuedMessage, holder: str, *, language_of: LanguageOf | None = None
    ) -> QueuedMessage | None:
        """Mark `message`'s turn done and start the next waiting message of its thread; None if no message
        waits (the lease is let go with the mark). Mostly none waits: the mark and the lease's release are
        one statement that commits by itself (one round trip on PostgreSQL; a second try of it, after a lost
        connection, finds the lease gone: None too); only a lease kept (a message waits) is refreshed and
        its next message started.

        None too if the lease is no longer `holder`'s: this replica stalled past its heartbeat and another
        took the thread over (`ThreadTurns.take`), whose turns the thread's next messages are now. The
        refresh checks that, and the next message is started only while the lease is `holder`'s."""
        async with self.storage.statement(idempotent=True) as connection:
            _, released = await self.storage.dialect.together(
                connection,
                self.events.finishing(message.event_id),
                self.thread_turns.releasing_if_idle(message.thread_id, holder, besides=message.event_id),
            )
        if released or not await self.thread_turns.keep(message.thread_id, holder):
            return None
        return await self._start_next(message.thread_id, holder, language_of)

    async def _start_next(self, thread_id: str, holder: str, language_of: LanguageOf | None) -> QueuedMessage | None:
        """Start the oldest waiting message of `thread_id`, whose lease `holder` has, and read the thread's
        conversation with it (one statement, `EventLog.start_next`), or let the lease go if none waits. A
        message that starts a conversation by itself (or continues one without a language yet) then records
        it (one statement, `Conversations.start`) with the language its starter reads,
        `language_of(thread_id, user)` (None: not needed, or unknown), asked for between the two, in no
        transaction (it may ask Slack)."""
        for _ in range(_LOOKS):
            message = await self.events.start_next(thread_id, holder)
            if message is not None:
                break
            if await self.thread_turns.release_if_idle(thread_id, holder):
                return None
            # kept: a message was queued after the look (PostgreSQL: committed meanwhile), or the lease is no
            # longer this holder's (it stalled past its heartbeat), and then nothing more is started here
            if not await self.thread_turns.keep(thread_id, holder):
                return None
        else:
            await self.thread_turns.release(thread_id, holder)  # never loop: the sweep takes what is left
            return None
        return await self._with_conversation(message, language_of)

    async def _with_conversation(self, message: QueuedMessage, language_of: LanguageOf | None) -> QueuedMessage:
        """`message`, started, with its conversation recorded if it starts one (see `_start_next`)."""
        if not message.starts_conversation or "user" not in message.event:
            return message  # (every queued message has its user: `is_from_a_person`)
        if message.conversation is not None and message.conversation.language is not None:
            return message  # the conversation goes on: its record is whole
        user = message.event["user"]
        language = await language_of(message.thread_id, user) if language_of is not None else None
        thread = thread_of_message(message.event, message.team_id)
        conversation, new = await self.conversations.start(thread, user, language=language)
        return replace(message, conversation=conversation, new_conversation=new)


LanguageOf = Callable[[str, str], Awaitable[str | None]]
"""The language a conversation's starter reads, given the thread and the starter; None when it is not needed
(the thread's language is known already) or cannot be told (`ReaderLanguages.wanted_for`)."""

_LOOKS = 3
"""Looks at a thread's queue while its lease is kept because a message waits (one look is enough unless a
message is queued between a look and the release)."""


@dataclass(frozen=True, kw_only=True)
class HomeRead:
    """What `SlackStores.home_read` found."""

    homes: dict[str, str | None]
    """Who opened the App Home, with the digest last published for them (empty unless asked for)."""
    approvals: list[ToolCallMessageRow]
    """The open approvals' messages, oldest first, one per call."""
    grants: list[Grant]
    """The agent's live grants, soonest to end first."""
    delegations: list[Delegation]
    """The delegations in force, soonest to end first."""


_SHOWN = {
    "approvals": select(ToolCallMessageRow.__table__).where(OPEN_APPROVAL),
    "grants": LIVE_GRANTS_OF_AGENT,
    "delegations": IN_FORCE,
}
_SHOWN_ALIKE = OneRead(**_SHOWN)
"""What every Home shows alike, one round trip for all of it."""
_HOME_READ = OneRead(homes=select(HomeViewRow.user_id, HomeViewRow.digest), **_SHOWN)
"""The same with the Homes opened, for a refresh of them all."""


__all__ = [
    "AnswerFeedback",
    "ClaimWriter",
    "ClickLog",
    "Conversations",
    "EventLog",
    "HomeRead",
    "HomeViews",
    "LanguageOf",
    "QueuedMessage",
    "SlackStores",
    "ThreadTurns",
    "WaitingCallMessages",
    "prepare_slack_tables",
]
