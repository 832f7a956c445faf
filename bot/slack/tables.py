"""The Slack adapter's own tables: events already handled (and the messages queued for a turn),
which replica holds a thread's turn, conversations the bot is part of, and the messages that show a
waiting tool call (an approval or a question).

They have their own `MetaData` and their own migrations (`bot/slack/migrations/`): a database used
only by the runtime never gets them.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import JSON, Boolean, ForeignKey, Index, Integer, MetaData, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from memory.limits import width
from memory.tables import Base, utcnow


class SlackTable(Base):
    """Base of the Slack adapter's tables: the runtime's column types, the adapter's own `MetaData`."""

    __abstract__ = True
    metadata = MetaData()


class SlackEventRow(SlackTable):
    """An Events API delivery already accepted: a retry with the same `event_id` is not processed again.

    A message the bot answers is also queued here, recorded before Slack gets its ack so a crash after
    the ack loses nothing: `thread_id` is set, and the message waits (`done_at` unset) for its turn,
    one at a time per thread in the order of the messages' `ts`.
    """

    __tablename__ = "slack_events"
    event_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    team_id: Mapped[str | None] = mapped_column(String(32))
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    thread_id: Mapped[str | None] = mapped_column(String(255))
    """The memory thread of a message queued for a turn; None for an event that is no turn."""
    message_ts: Mapped[str | None] = mapped_column(String(32))
    """The message's own ts: turns in one thread follow it."""
    event: Mapped[Any | None] = mapped_column(JSON)
    """What the turn needs of the event (type, user, text, channel, ts, thread_ts, channel_type)."""
    bot_user_id: Mapped[str | None] = mapped_column(String(32))
    """The bot's user ID when the event came (to strip its mention from the text)."""
    started_at: Mapped[datetime | None]
    """When a replica started the turn; a turn started but never done was interrupted by a crash."""
    done_at: Mapped[datetime | None]

    __table_args__ = (Index("ix_slack_events_queue", "thread_id", "done_at", "message_ts"),)


class SlackThreadTurnRow(SlackTable):
    """A thread whose turn a replica is taking now: one row per busy thread, held by `holder` while its
    `heartbeat_at` is fresh; a crashed holder's row goes stale and another replica takes it over."""

    __tablename__ = "slack_thread_turns"
    thread_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    holder: Mapped[str] = mapped_column(String(128))
    heartbeat_at: Mapped[datetime] = mapped_column(default=utcnow)


class SlackConversationRow(SlackTable):
    """A Slack thread the bot takes part in: later messages there continue it without a mention."""

    __tablename__ = "slack_conversations"
    thread_id: Mapped[str] = mapped_column(String(255), primary_key=True)
    """The memory thread id (`slack:<team>:<channel>:<thread_ts>`)."""
    team_id: Mapped[str] = mapped_column(String(32))
    channel: Mapped[str] = mapped_column(String(32))
    thread_ts: Mapped[str] = mapped_column(String(32))
    started_by: Mapped[str] = mapped_column(String(32))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    language: Mapped[str | None] = mapped_column(String(16), nullable=True)
    """The language of the bot's words in the thread: its starter's when the bot first wrote there, kept
    for the conversation's life (`reader_language.ReaderLanguages.of_thread`); None until then."""


class ToolCallMessageRow(SlackTable):
    """The Slack message that shows one waiting tool call: an approval (buttons) or a question (Answer).

    `id` is the opaque reference put in the buttons' value; a click is trusted only after the row it
    names matches the clicked message and the runtime says the call still waits.
    """

    __tablename__ = "slack_tool_call_messages"
    id: Mapped[str] = mapped_column(String(64), primary_key=True)
    kind: Mapped[str] = mapped_column(String(16))
    """`approval` or `question`."""
    run_id: Mapped[str] = mapped_column(String(64))
    tool_call_id: Mapped[str] = mapped_column(String(255))
    tool_name: Mapped[str] = mapped_column(String(255))
    args: Mapped[Any] = mapped_column(JSON, nullable=True)
    """What the message showed when posted: the call's arguments (approval) or what the tool asked (question)."""
    thread_id: Mapped[str] = mapped_column(String(255))
    team_id: Mapped[str] = mapped_column(String(32))
    channel: Mapped[str] = mapped_column(String(32))
    thread_ts: Mapped[str] = mapped_column(String(32))
    ts: Mapped[str | None] = mapped_column(String(32))
    """The message's own ts, set once it is posted."""
    requester: Mapped[str] = mapped_column(String(32))
    """The Slack user whose message led to the call (the memory resource)."""
    request_text: Mapped[str | None] = mapped_column(Text)
    """What the requester asked, shown as the "why"."""
    closed_at: Mapped[datetime | None]
    """When the message was last updated to show the outcome (no buttons)."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    waiting_since: Mapped[datetime | None]
    """When the call began the wait this message shows (the runtime's `suspended_at`): a call that waits
    again later (an interrupted call, a question asked again) gets a new message."""
    interrupted: Mapped[bool] = mapped_column(Boolean, default=False)
    """The call had started and may or may not have taken effect: approving runs it again."""
    post_claimed_at: Mapped[datetime | None]
    """When a process last took on posting the message; another may take over once this is old."""
    post_attempts: Mapped[int] = mapped_column(Integer, default=0)
    """How many times posting was taken on (the recovery waits longer between tries as this grows)."""
    maybe_copies: Mapped[bool] = mapped_column(Boolean, default=False)
    """A post ended without a clear answer (a dropped connection, a 5xx, a crash), so Slack may hold
    copies nobody recorded: the thread is searched for them before posting again and after a decision."""

    __table_args__ = (
        Index("ix_slack_tool_call_messages_call", "run_id", "tool_call_id"),
        Index("ix_slack_tool_call_messages_thread", "thread_id", "closed_at"),
        Index("ix_slack_tool_call_messages_wait", "run_id", "tool_call_id", "waiting_since", unique=True),
        Index("ix_slack_tool_call_messages_unposted", "ts", "closed_at"),
    )


class HomeViewRow(SlackTable):
    """A user who opened the bot's App Home, and a digest of the view last published for them.

    Kept in the database so that every replica refreshes the Homes of everyone who opened one, and
    publishes only when what that user would see changed.
    """

    __tablename__ = "slack_home_views"
    user_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    digest: Mapped[str | None] = mapped_column(String(64))
    """SHA-256 of the view last published; None until the first publish."""
    opened_at: Mapped[datetime] = mapped_column(default=utcnow)
    published_at: Mapped[datetime | None]


class ToolCallMessageCopyRow(SlackTable):
    """Another Slack message that shows the same waiting call (a post retried after Slack had created
    it, or posted again by the recovery): a click on it decides the call too, and it is updated with
    the decision like the first."""

    __tablename__ = "slack_tool_call_message_copies"
    message_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("slack_tool_call_messages.id", ondelete="CASCADE"), primary_key=True
    )
    ts: Mapped[str] = mapped_column(String(32), primary_key=True)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    channel: Mapped[str | None] = mapped_column(String(32))
    """The channel the copy is in, when not the first message's (an escalation's DM or channel post)."""
    escalated_to: Mapped[str | None] = mapped_column(String(32))
    """For a copy the escalation posted: whom it was posted to (a member's user ID, or the channel ID),
    so a retried escalation never posts to them twice."""


class EscalationPostRow(SlackTable):
    """An escalation's post of an approval to one person (a DM) or channel, recorded before it is posted.

    A post can be carried out by Slack and its answer lost (a dropped connection, a process killed): its copy
    is then not recorded, and a retried escalation would post a second one. A post recorded here without a
    copy (`ToolCallMessageCopyRow.escalated_to`) is looked for in its channel first, by the retry and when the
    call is settled, so every copy in Slack is known and shows the decision."""

    __tablename__ = "slack_escalation_posts"
    message_id: Mapped[str] = mapped_column(
        String(64), ForeignKey("slack_tool_call_messages.id", ondelete="CASCADE"), primary_key=True
    )
    escalated_to: Mapped[str] = mapped_column(String(32), primary_key=True)
    """A member's user ID (a DM) or a channel's ID."""
    tried_at: Mapped[datetime] = mapped_column(default=utcnow)


class AnswerFeedbackRow(SlackTable):
    """One person's thumbs up or down on an answer of the agent: one row per run and person, so a second
    click changes the rating and never counts twice. `tool_names` are the tools the run used, read when
    the rating was given, so the App Home counts ratings per tool without reading the runtime's rows."""

    __tablename__ = "slack_answer_feedback"
    run_id: Mapped[str] = mapped_column(String(64), primary_key=True)
    user_id: Mapped[str] = mapped_column(String(32), primary_key=True)
    rating: Mapped[str] = mapped_column(String(8))
    """`up` or `down`."""
    tool_names: Mapped[Any] = mapped_column(JSON)
    """The tools whose calls ran in the answered run (a list; empty for an answer without a tool)."""
    thread_id: Mapped[str] = mapped_column(String(255))
    channel: Mapped[str] = mapped_column(String(32))
    message_ts: Mapped[str] = mapped_column(String(32))
    """The answer's message the buttons were on."""
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
    updated_at: Mapped[datetime] = mapped_column(default=utcnow)


class SlackClickRow(SlackTable):
    """A button click, recorded before Slack gets its ack: a click acknowledged and then lost with its
    replica (a crash, a kill) is carried out after all by a replica's sweep, from the payload kept here.
    A click is `done` once its listener returned; one that is not, and whose `taken_at` went stale, is
    taken again (`tries` counts the takes, so a click that always fails ends)."""

    __tablename__ = "slack_clicks"
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    received_at: Mapped[datetime] = mapped_column(default=utcnow)
    action_id: Mapped[str] = mapped_column(String(255))
    payload: Mapped[Any] = mapped_column(JSON)
    """The `block_actions` payload as read at the boundary (`request_reading`)."""
    holder: Mapped[str | None] = mapped_column(String(64))
    """The replica carrying the click out (the agent's `owner`)."""
    taken_at: Mapped[datetime] = mapped_column(default=utcnow)
    tries: Mapped[int] = mapped_column(Integer, default=1)
    done_at: Mapped[datetime | None]

    __table_args__ = (Index("ix_slack_clicks_open", "done_at", "taken_at"),)


# --- how long an id from Slack may be: the narrowest column it is stored in (`memory.limits`), checked
# where a payload comes in (`request_reading.SHAPES`, `directory.is_user_id`) so none reaches a statement
EVENT_ID = width(SlackEventRow.event_id)
TEAM_ID = min(width(SlackEventRow.team_id), width(SlackConversationRow.team_id), width(ToolCallMessageRow.team_id))
CHANNEL_ID = min(
    width(SlackConversationRow.channel), width(ToolCallMessageRow.channel), width(AnswerFeedbackRow.channel)
)
TS = min(width(SlackEventRow.message_ts), width(ToolCallMessageRow.ts), width(AnswerFeedbackRow.message_ts))
USER_ID = min(
    width(SlackConversationRow.started_by),
    width(ToolCallMessageRow.requester),
    width(HomeViewRow.user_id),
    width(AnswerFeedbackRow.user_id),
    width(SlackEventRow.bot_user_id),
)
