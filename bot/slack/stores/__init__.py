"""The Slack adapter's reads and writes of its own tables (`../tables.py`), one store per table.

- `EventLog` (`events.py`): handled events (the dedup of deliveries) and the messages queued for their turn;
- `ThreadTurns` (`thread_turns.py`): which replica holds the turn of a thread (a lease with a heartbeat);
- `Conversations` (`conversations.py`): the threads the bot takes part in;
- `WaitingCallMessages` (`waiting_call_messages.py`): the messages that show waiting calls, and their copies;
- `HomeViews` (`home_views.py`): who opened the App Home, and what was last published for them;
- `AnswerFeedback` (`answer_feedback.py`): people's thumbs up / down on the agent's answers.

Each method is one short transaction. The tables are migrated once, when the bot starts
(`prepare_slack_tables`), never on the way of a call.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from memory import Storage

from ..migrations import SCHEMA
from .answer_feedback import AnswerFeedback
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
class SlackStores:
    """The adapter's stores, one per table, on one storage."""

    events: EventLog
    thread_turns: ThreadTurns
    conversations: Conversations
    messages: WaitingCallMessages
    home_views: HomeViews
    feedback: AnswerFeedback

    @classmethod
    def on(cls, storage: Storage, *, keep_events: timedelta = timedelta(days=1)) -> SlackStores:
        return cls(
            events=EventLog(storage, keep_events=keep_events),
            thread_turns=ThreadTurns(storage),
            conversations=Conversations(storage),
            messages=WaitingCallMessages(storage),
            home_views=HomeViews(storage),
            feedback=AnswerFeedback(storage),
        )

    @property
    def storage(self) -> Storage:
        return self.events.storage


__all__ = [
    "AnswerFeedback",
    "ClaimWriter",
    "Conversations",
    "EventLog",
    "HomeViews",
    "QueuedMessage",
    "SlackStores",
    "ThreadTurns",
    "WaitingCallMessages",
    "prepare_slack_tables",
]
