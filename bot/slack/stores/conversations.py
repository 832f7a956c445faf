"""Conversations (`slack_conversations`): the threads the bot takes part in, and who started each."""

from __future__ import annotations

from sqlalchemy import bindparam, case, func, select, update

from memory import Storage, retried_while_away
from memory.tables import utcnow

from ..tables import SlackConversationRow
from ..threads import SlackThread
from ._table_store import TableStore


@retried_while_away
class Conversations(TableStore):
    """The threads the bot takes part in."""

    def __init__(self, storage: Storage):
        super().__init__(storage)
        insert = self._insert(SlackConversationRow).values(
            thread_id=bindparam("b_thread"),
            team_id=bindparam("b_team"),
            channel=bindparam("b_channel"),
            thread_ts=bindparam("b_thread_ts"),
            started_by=bindparam("b_user"),
            created_at=bindparam("b_now"),
            language=bindparam("b_language"),
        )
        # a conversation there already keeps its language, or, without one, takes its starter's if given
        starters = case((_TABLE.c.started_by == insert.excluded.started_by, insert.excluded.language), else_=None)
        self._start = insert.on_conflict_do_update(
            index_elements=["thread_id"], set_={"language": func.coalesce(_TABLE.c.language, starters)}
        ).returning(*_TABLE.columns)

    async def start(
        self, thread: SlackThread, user: str, *, language: str | None = None
    ) -> tuple[SlackConversationRow, bool]:
        """Remember that the bot takes part in `thread` (idempotent); the first user to start it owns it.
        The conversation's row (of its own, not attached to any session), and whether this call created
        it. `language`: the language `user` reads, the conversation's when `user` started it and it has
        none yet (`ReaderLanguages.of_thread`).

        One statement that commits by itself: an INSERT whose conflict leaves the row as it is (but for a
        language it lacked) and returns it; the row is new when it holds the creation time this call wrote."""
        values = {
            "b_thread": thread.thread_id,
            "b_team": thread.team_id,
            "b_channel": thread.channel,
            "b_thread_ts": thread.thread_ts,
            "b_user": user,
            "b_now": utcnow(),
            "b_language": language,
        }
        async with self._one_statement(idempotent=True) as connection:
            row = SlackConversationRow(**(await connection.execute(self._start, values)).one()._mapping)
        return row, row.created_at == values["b_now"]

    async def get(self, thread: SlackThread) -> SlackConversationRow | None:
        """The conversation held in `thread`, or None if the bot takes no part in it."""
        return await self.get_by_id(thread.thread_id)

    async def get_by_id(self, thread_id: str) -> SlackConversationRow | None:
        """The conversation held in the thread of the memory thread id `thread_id`, or None."""
        async with self._reading() as connection:
            row = (await connection.execute(_CONVERSATION, {"b_thread": thread_id})).first()
        return SlackConversationRow(**row._mapping) if row else None

    async def keep_language(self, thread_id: str, language: str) -> str | None:
        """Fix the language of the conversation in `thread_id` to `language` unless it has one already; the
        language it has now (None when the bot takes no part in the thread). One UPDATE that keeps a language
        already there and returns the one it leaves: when two replicas fix it at once, the first write stays
        and both read it (PostgreSQL: the second waits for the first's row lock, then sees its language)."""
        async with self._one_statement(idempotent=True) as connection:
            return (await connection.execute(_KEEP_LANGUAGE, {"b_thread": thread_id, "b_language": language})).scalar()


_TABLE = SlackConversationRow.__table__
_CONVERSATION = select(_TABLE).where(_TABLE.c.thread_id == bindparam("b_thread"))
_KEEP_LANGUAGE = (
    update(SlackConversationRow)
    .where(_TABLE.c.thread_id == bindparam("b_thread"))
    .values(language=func.coalesce(_TABLE.c.language, bindparam("b_language")))
    .returning(_TABLE.c.language)
)
