"""App Home views (`slack_home_views`): who opened the App Home, and a digest of what was last published
for them, so a Home is published only for users who opened it and only when its content changed."""

from __future__ import annotations

from sqlalchemy import bindparam, case, select, update

from memory import retried_while_away
from memory.tables import utcnow

from ..tables import HomeViewRow
from ._table_store import TableStore


@retried_while_away
class HomeViews(TableStore):
    """The App Homes the bot keeps up to date."""

    async def opened(self, user_id: str) -> str | None:
        """Remember that `user_id` opened the App Home (their Home is refreshed from now on); the digest of the
        view last published for them (None: never), in the same statement."""
        insert = self._insert(HomeViewRow)
        statement = (
            insert.values(user_id=user_id, digest=None, opened_at=utcnow())
            .on_conflict_do_update(index_elements=["user_id"], set_={"user_id": insert.excluded.user_id})
            .returning(HomeViewRow.digest)
        )  # an update to the same value, for RETURNING to give the row that was there
        async with self._one_statement(idempotent=True) as connection:
            return (await connection.execute(statement)).scalar_one()

    async def digests(self) -> dict[str, str | None]:
        """Every user who opened the App Home, with the digest of the view last published for them."""
        async with self._reading() as connection:
            return {row.user_id: row.digest for row in await connection.execute(_DIGESTS)}

    async def digest(self, user_id: str) -> str | None:
        """The digest of the view last published for `user_id` (None: never, or never opened)."""
        async with self._reading() as connection:
            return await connection.scalar(_DIGEST, {"b_user": user_id})

    async def published(self, user_id: str, digest: str) -> None:
        """Record that the view of `digest` was published for `user_id`."""
        await self.published_many({user_id: digest})

    async def published_many(self, digests: dict[str, str]) -> None:
        """Record the views published, by user (their digests), in one statement."""
        if not digests:
            return
        digest = case(*((HomeViewRow.user_id == user, value) for user, value in digests.items()))
        async with self._one_statement(idempotent=True) as connection:
            await connection.execute(
                update(HomeViewRow)
                .where(HomeViewRow.user_id.in_(list(digests)))
                .values(digest=digest, published_at=utcnow())
            )


_DIGESTS = select(HomeViewRow.user_id, HomeViewRow.digest)
_DIGEST = select(HomeViewRow.digest).where(HomeViewRow.user_id == bindparam("b_user"))
