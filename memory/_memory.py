"""Thread-scoped conversation history, replayed to the model in a form every OpenAI-compatible server accepts."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from sqlalchemy import bindparam, select

from ._reconnect import retried_while_away
from ._runs import message_of
from ._storage import Storage
from .tables import MessageRow, RunRow

WAITING_RESULT = json.dumps(
    {"status": "waiting", "note": "This call has not finished: it waits for a human decision or an answer."}
)


_MESSAGE_COLUMNS = (MessageRow.role, MessageRow.content, MessageRow.tool_calls, MessageRow.tool_call_id)
"""What `message_of` reads of a stored message: loaded as plain rows, not mapped objects."""


@retried_while_away
class Memory:
    """Conversation history per thread, owned by a resource.

    The window sent to the model holds at most `last_messages` messages and about `max_tokens`
    tokens (estimated at four characters a token), and never separates a tool call from its result.
    """

    def __init__(self, storage: Storage, *, last_messages: int = 40, max_tokens: int = 8000):
        self.storage = storage
        self.last_messages = last_messages
        self.max_tokens = max_tokens
        self._window = (  # built once: building it cost more than running it
            select(*_MESSAGE_COLUMNS)
            .where(MessageRow.thread_id == bindparam("b_thread"))
            .order_by(MessageRow.id.desc())
            .limit(last_messages)
        )

    async def window(self, thread_id: str) -> list[dict[str, Any]]:
        """The latest messages of the thread, each tool call followed right away by its result."""
        async with self.storage.read() as connection:
            rows = list(await connection.execute(self._window, {"b_thread": thread_id}))
        return self.window_of([message_of(r) for r in reversed(rows)])

    def window_of(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """The window of a thread whose messages, oldest first, are `messages` (a thread just made holds
        only what its first run stored: no read needed)."""
        return bounded(pair_tool_results(messages[-self.last_messages :]), self.max_tokens)

    async def messages(self, thread_id: str) -> list[dict[str, Any]]:
        """Every stored message of the thread, in order, as stored."""
        async with self.storage.read() as connection:
            rows = await connection.execute(
                select(*_MESSAGE_COLUMNS).where(MessageRow.thread_id == thread_id).order_by(MessageRow.id)
            )
            return [message_of(r) for r in rows]

    async def user_spoke_since(self, thread_id: str, since: datetime) -> bool:
        """Whether a user's message was stored in the thread at or after `since` (a run started on it, or
        an answer that resumed a waiting call): how a front end learns, after a crash, whether the
        runtime took a message it had started to hand over."""
        async with self.storage.read() as connection:
            found = await connection.scalar(
                select(MessageRow.id)
                .where(MessageRow.thread_id == thread_id, MessageRow.role == "user", MessageRow.created_at >= since)
                .limit(1)
            )
        return found is not None

    async def taken_by(self, thread_id: str, message_id: str) -> str | None:
        """The status of the run that took the thread's message `message_id` (`Agent.stream`'s `message_id`: it
        started that run, or answered a call of it); None when nothing took it (or it was stored unnamed)."""
        taken = await self.run_that_took(thread_id, message_id)
        return None if taken is None else taken[1]

    async def run_that_took(self, thread_id: str, message_id: str) -> tuple[str, str] | None:
        """The id and status of the run that took the thread's message `message_id` (see `taken_by`)."""
        async with self.storage.read() as connection:
            row = (
                await connection.execute(
                    select(RunRow.id, RunRow.status)
                    .join(MessageRow, MessageRow.run_id == RunRow.id)
                    .where(MessageRow.thread_id == thread_id, MessageRow.source_id == message_id)
                    .limit(1)
                )
            ).first()
        return None if row is None else (str(row.id), str(row.status))

    async def answered_since(self, thread_id: str, since: datetime) -> bool:
        """Whether a run of the thread that started at or after `since` finished with its answer: how a front
        end learns, after the replica that took a message stalled or stopped, that the answer was given."""
        async with self.storage.read() as connection:
            found = await connection.scalar(
                select(RunRow.id)
                .where(RunRow.thread_id == thread_id, RunRow.created_at >= since, RunRow.status == "completed")
                .limit(1)
            )
        return found is not None


def pair_tool_results(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Group messages so each assistant tool-call message is followed by one result per call.

    A call whose result came after the thread went on (it waited for a decision while other messages
    were said) moves down, with its result, to where the result was stored, so the conversation reads
    in the order things happened and a resumed run's request ends with the result. A call with no
    result yet gets a placeholder; a result whose call is outside the window is dropped.
    """
    result_at = {m["tool_call_id"]: i for i, m in enumerate(messages) if m["role"] == "tool"}
    deferred: dict[int, list[list[dict[str, Any]]]] = {}
    groups: list[list[dict[str, Any]]] = []
    for index, message in enumerate(messages):
        if message["role"] == "tool":
            groups.extend(deferred.pop(index, []))
            continue
        call_ids = [tool_call["id"] for tool_call in message.get("tool_calls") or []]
        group = [message] + [
            messages[result_at[c]] if c in result_at else {"role": "tool", "tool_call_id": c, "content": WAITING_RESULT}
            for c in call_ids
        ]
        if call_ids and all(c in result_at for c in call_ids):
            last = max(result_at[c] for c in call_ids)
            if any(messages[k]["role"] != "tool" for k in range(index + 1, last)):
                deferred.setdefault(last, []).append(group)
                continue
        groups.append(group)
    return groups


def bounded(groups: list[list[dict[str, Any]]], max_tokens: int) -> list[dict[str, Any]]:
    """The newest groups that fit the token budget (the newest one always), flattened."""
    kept: list[list[dict[str, Any]]] = []
    used = 0
    for group in reversed(groups):
        cost = estimate_tokens(group)
        if kept and used + cost > max_tokens:
            break
        kept.append(group)
        used += cost
    kept.reverse()
    while kept and kept[0][0]["role"] != "user" and len(kept) > 1:
        kept.pop(0)  # a window opens with the user's words, not half of an earlier exchange
    return [message for group in kept for message in group]


def estimate_tokens(messages: list[dict[str, Any]]) -> int:
    return sum(len(json.dumps(m)) for m in messages) // 4 + 1
