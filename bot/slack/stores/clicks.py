"""Button clicks and submitted forms recorded before their ack (`slack_clicks`), and the sweep's take of those
left undone.

A click is written with its payload before Slack gets its 200, so a replica that dies after the ack and
before the click's work committed leaves the click to be carried out by a replica's sweep (`clicks.py`).
Clicks that arrive together are written in one transaction (`ClaimWriter`, as the events are).
"""

from __future__ import annotations

import asyncio
import uuid
from collections import OrderedDict
from datetime import timedelta
from typing import Any

from sqlalchemy import bindparam, delete, update
from sqlalchemy.sql.dml import UpdateBase

from memory import Storage, retried_while_away
from memory.tables import utcnow

from ..tables import SlackClickRow
from ._table_store import TableStore, rows_changed
from .events import ClaimWriter


@retried_while_away
class ClickLog(TableStore):
    """The clicks recorded before their ack, until their listener returned."""

    def __init__(
        self,
        storage: Storage,
        *,
        keep_done: timedelta = timedelta(days=1),
        prune_every: int = 500,
        write_loop: asyncio.AbstractEventLoop | None = None,
    ):
        """`write_loop`: the loop (of a thread of its own) where the clicks are recorded and marked done, and
        where `storage`'s connections live (`ClaimWriter`); None: the caller's."""
        super().__init__(storage)
        self.keep_done = keep_done
        self._write_loop = write_loop
        self._writer = ClaimWriter(self._insert_clicks, loop=write_loop, prune=self.prune, prune_every=prune_every)
        self._marked: OrderedDict[str, None] = OrderedDict()
        """Clicks marked done with other work (`done_with`) that their listener's end need not mark again."""

    async def record(self, payload: dict[str, Any], *, holder: str) -> str:
        """Record a click (a `block_actions` payload) or a submitted form (`view_submission`, its modal's
        `callback_id` as its action) that `holder` carries out now; its id."""
        click_id = uuid.uuid4().hex
        actions = payload.get("actions") or [{"action_id": (payload.get("view") or {}).get("callback_id")}]
        now = utcnow()
        await self._writer.claim(
            {
                "id": click_id,
                "event_id": click_id,  # the writer's key
                "received_at": now,
                "action_id": str(actions[0].get("action_id") or "")[:255],
                "payload": payload,
                "holder": holder,
                "taken_at": now,
                "tries": 1,
            }
        )
        return click_id

    async def _insert_clicks(self, rows: list[dict[str, Any]]) -> set[str]:
        values = [{key: value for key, value in row.items() if key != "event_id"} for row in rows]
        # each click's id is its own: a second try of the INSERT after a lost connection adds nothing
        statement = self._insert(SlackClickRow).on_conflict_do_nothing(index_elements=["id"])
        async with self._one_statement(idempotent=True) as connection:
            await connection.execute(statement, values)
        return {row["id"] for row in rows}

    def done_with(self, click_id: str) -> UpdateBase:
        """The statement that marks the click done, to be run with the write that settles its work
        (`Dialect.together`); once it ran, `marked_done` spares its listener's end a write of its own."""
        return (
            update(SlackClickRow)
            .where(SlackClickRow.id == click_id, SlackClickRow.done_at.is_(None))
            .values(self.storage.dialect.row(SlackClickRow.__table__, {"done_at": utcnow()}, updating=True))
        )

    def marked_done(self, click_id: str) -> None:
        """The click was marked done with its work (`done_with`): `done` writes nothing for it."""
        self._marked[click_id] = None
        while len(self._marked) > 1000:  # a listener that never ended: forgotten, at worst marked twice
            self._marked.popitem(last=False)

    async def done(self, click_id: str) -> None:
        """The click's listener returned: nothing of it is left to carry out."""
        if self._marked.pop(click_id, False) is None:
            return  # marked with the work that settled it
        if self._write_loop is None or self._write_loop is asyncio.get_running_loop():
            await _mark_done(self, click_id)
        else:
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(_mark_done(self, click_id), self._write_loop))

    async def take_left(self, *, holder: str, stale_after: float) -> list[tuple[str, dict[str, Any], int]]:
        """Take the clicks not done whose holder has not finished them within `stale_after` seconds (it
        stopped, or never got to them): (id, payload, tries) of each, now held by `holder`."""
        now = utcnow()
        # a take that landed but whose answer was lost is taken again once it is stale: tried again here
        async with self._one_statement(idempotent=True) as connection:
            rows = (
                await connection.execute(
                    update(SlackClickRow)
                    .where(
                        SlackClickRow.done_at.is_(None), SlackClickRow.taken_at < now - timedelta(seconds=stale_after)
                    )
                    .values(holder=holder, taken_at=now, tries=SlackClickRow.tries + 1)
                    .returning(SlackClickRow.id, SlackClickRow.payload, SlackClickRow.tries)
                )
            ).all()
        return [(row.id, row.payload, row.tries) for row in rows]

    async def prune(self) -> int:
        """Forget clicks done more than `keep_done` ago; how many."""
        async with self._one_statement(idempotent=True) as connection:
            result = await connection.execute(
                delete(SlackClickRow).where(SlackClickRow.done_at < utcnow() - self.keep_done)
            )
        return rows_changed(result)


async def _mark_done(clicks: ClickLog, click_id: str) -> None:
    # not a method: `retried_while_away` tries `done` again as a whole, not this part of it apart
    async with clicks._one_statement(idempotent=True) as connection:
        await connection.execute(_DONE, {"b_id": click_id, "b_now": utcnow()})


_DONE = (
    update(SlackClickRow)
    .where(SlackClickRow.id == bindparam("b_id"), SlackClickRow.done_at.is_(None))
    .values(done_at=bindparam("b_now"))
)
