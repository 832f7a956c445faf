"""Thumbs up / down on the agent's answers (`slack_answer_feedback`, `AnswerFeedbackRow`): record a person's rating, count them per tool.

A rating is one row per run and person. The first click inserts it (an INSERT that does nothing on
conflict); a later click changes it with one conditional UPDATE (`WHERE rating <> new`), so the database
says whether anything changed and a repeated or racing click never counts twice.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Literal

from sqlalchemy import select, update

from memory import retried_while_away
from memory.tables import utcnow

from ..tables import AnswerFeedbackRow
from ._table_store import TableStore

Rating = Literal["up", "down"]
RATINGS: tuple[Rating, ...] = ("up", "down")
RatingChange = Literal["new", "changed", "same"]
NO_TOOL = ""
"""The key of `counts_per_tool` for answers that used no tool."""


@dataclass(frozen=True, kw_only=True)
class ToolFeedback:
    """How people rated the answers that used one tool (`tool_name` "" for answers without a tool)."""

    tool_name: str
    up: int = 0
    down: int = 0


@retried_while_away
class AnswerFeedback(TableStore):
    """People's ratings of the agent's answers."""

    async def record(
        self,
        *,
        run_id: str,
        user_id: str,
        rating: Rating,
        tool_names: list[str],
        thread_id: str,
        channel: str,
        message_ts: str,
    ) -> RatingChange:
        """Record `user_id`'s `rating` of the run's answer: `new` (first rating), `changed` (from the other
        rating) or `same` (they had given this one already; nothing is written)."""
        now = utcnow()
        statement = (
            self._insert(AnswerFeedbackRow)
            .values(
                run_id=run_id,
                user_id=user_id,
                rating=rating,
                tool_names=tool_names,
                thread_id=thread_id,
                channel=channel,
                message_ts=message_ts,
                created_at=now,
                updated_at=now,
            )
            .on_conflict_do_nothing(index_elements=["run_id", "user_id"])
        )
        async with self._writing() as connection:
            if (await connection.execute(statement)).rowcount:
                return "new"
            changed = await connection.execute(
                update(AnswerFeedbackRow)
                .where(
                    AnswerFeedbackRow.run_id == run_id,
                    AnswerFeedbackRow.user_id == user_id,
                    AnswerFeedbackRow.rating != rating,
                )
                .values(rating=rating, tool_names=tool_names, message_ts=message_ts, updated_at=now)
            )
            return "changed" if changed.rowcount else "same"

    async def rating_of(self, run_id: str, user_id: str) -> Rating | None:
        async with self._reading() as connection:
            return await connection.scalar(
                select(AnswerFeedbackRow.rating).where(
                    AnswerFeedbackRow.run_id == run_id, AnswerFeedbackRow.user_id == user_id
                )
            )

    async def counts_per_tool(self) -> list[ToolFeedback]:
        """Ratings per tool, each answer counted for every tool it used; tools by name, answers without a
        tool (`NO_TOOL`) last."""
        counts: Counter[tuple[str, str]] = Counter()
        async with self._reading() as connection:
            rows = await connection.execute(select(AnswerFeedbackRow.rating, AnswerFeedbackRow.tool_names))
            for rating, tool_names in rows:
                for name in set(tool_names or []) or {NO_TOOL}:
                    counts[(str(name), rating)] += 1
        names = sorted({name for name, _ in counts}, key=lambda name: (name == NO_TOOL, name))
        return [ToolFeedback(tool_name=name, up=counts[(name, "up")], down=counts[(name, "down")]) for name in names]
