"""Alembic environment: runs on the connection `Storage.migrate` hands over, or on `sqlalchemy.url` from the command line."""

import asyncio

from alembic import context
from sqlalchemy.ext.asyncio import create_async_engine

from memory.tables import Base

target_metadata = Base.metadata


def run_on(connection) -> None:
    context.configure(connection=connection, target_metadata=target_metadata, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


async def run_from_url(url: str) -> None:
    engine = create_async_engine(url)
    async with engine.begin() as connection:
        await connection.run_sync(run_on)
    await engine.dispose()


connection = context.config.attributes.get("connection")
if connection is not None:
    run_on(connection)
else:
    url = context.get_x_argument(as_dictionary=True).get("url") or context.config.get_main_option("sqlalchemy.url")
    asyncio.run(run_from_url(url))
