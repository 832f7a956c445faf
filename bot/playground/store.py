"""Keeps the emulated workspace in the playground's database: loaded at start, written as it changes.

The workspace stays in memory (the Web API and the page read it many times a second); each change it
reports marks what changed, and a background task writes the marked messages, modal stacks and Home
views in one transaction, a moment later. `close()` writes what is still marked before the playground
stops. A change lost to a crash is at most the last fraction of a second.
"""

from __future__ import annotations

import asyncio
import logging

from sqlalchemy import delete, select
from sqlalchemy.ext.asyncio import AsyncSession

from bot.slack_emulator import Message, Modal, Workspace
from memory import Storage

from .tables import PlaygroundHomeViewRow, PlaygroundMessageRow, PlaygroundModalRow

log = logging.getLogger(__name__)

WRITE_DELAY = 0.05
"""Seconds changes gather before they are written (a streamed answer changes a message many times)."""


class WorkspaceStore:
    """Writes one workspace's changes to `storage` (see the module docstring)."""

    def __init__(self, storage: Storage, workspace: Workspace):
        self.storage = storage
        self.workspace = workspace
        self._messages: set[tuple[str, str]] = set()
        self._modal_users: set[str] = set()
        self._homes = False
        self._marked = asyncio.Event()
        self._writer: asyncio.Task[None] | None = None

    async def load(self) -> None:
        """Put what the database holds into the workspace (before anyone uses it), then follow its changes."""
        async with self.storage.session() as session:
            for row in await session.scalars(select(PlaygroundMessageRow)):
                if row.channel not in self.workspace.channels:
                    continue  # a channel this run does not have (another agent's DM, say)
                message = Message(
                    channel=row.channel,
                    ts=row.ts,
                    user=row.user,
                    text=row.text,
                    blocks=list(row.blocks or []),
                    thread_ts=row.thread_ts,
                    format=row.format,
                    streaming=False,  # a stream cut by the stop ends where it was
                    edited=row.edited,
                    ephemeral_to=row.ephemeral_to,
                )
                self.workspace.messages[(row.channel, row.ts)] = message
            modals = await session.scalars(select(PlaygroundModalRow).order_by(PlaygroundModalRow.position))
            for stored in modals:
                modal = Modal(
                    id=stored.id, user=stored.user, view=stored.view, errors=dict(stored.errors or {}), hash=stored.hash
                )
                self.workspace.modals.setdefault(stored.user, []).append(modal)
            for home in await session.scalars(select(PlaygroundHomeViewRow)):
                self.workspace.home_views[home.user] = home.view
        self.workspace.on_change.append(self._mark)
        self._writer = asyncio.create_task(self._write_forever(), name="playground-workspace-writer")

    async def close(self) -> None:
        """Stop following changes and write what is still marked."""
        if self._mark in self.workspace.on_change:
            self.workspace.on_change.remove(self._mark)
        if self._writer is not None:
            self._writer.cancel()
            await asyncio.gather(self._writer, return_exceptions=True)
            self._writer = None
        await self.write()

    def _mark(self, what: Message | Modal | None) -> None:
        if isinstance(what, Message):
            self._messages.add((what.channel, what.ts))
        elif isinstance(what, Modal):
            self._modal_users.add(what.user)
        else:
            self._homes = True
        self._marked.set()

    async def _write_forever(self) -> None:
        while True:
            await self._marked.wait()
            await asyncio.sleep(WRITE_DELAY)
            try:
                await self.write()
            except Exception:  # noqa: BLE001 - the playground goes on; the next change tries again
                log.exception("could not store the playground's workspace")

    async def write(self) -> None:
        """Write every marked message, modal stack and the Home views, in one transaction."""
        self._marked.clear()
        messages, self._messages = self._messages, set()
        modal_users, self._modal_users = self._modal_users, set()
        homes, self._homes = self._homes, False
        if not (messages or modal_users or homes):
            return
        try:
            async with self.storage.session() as session:  # one transaction
                for key in messages:
                    await self._write_message(session, key)
                for user in modal_users:
                    await session.execute(delete(PlaygroundModalRow).where(PlaygroundModalRow.user == user))
                    for position, modal in enumerate(self.workspace.modals.get(user, [])):
                        session.add(
                            PlaygroundModalRow(
                                id=modal.id,
                                user=user,
                                position=position,
                                view=modal.view,
                                errors=modal.errors,
                                hash=modal.hash,
                            )
                        )
                if homes:
                    await session.execute(delete(PlaygroundHomeViewRow))
                    for user, view in self.workspace.home_views.items():
                        session.add(PlaygroundHomeViewRow(user=user, view=view))
        except BaseException:
            # not written: mark it all again, so the next write (or close) tries again
            self._messages |= messages
            self._modal_users |= modal_users
            self._homes = self._homes or homes
            raise

    async def _write_message(self, session: AsyncSession, key: tuple[str, str]) -> None:
        message = self.workspace.messages.get(key)
        row = await session.get(PlaygroundMessageRow, key)
        if message is None:
            if row is not None:
                await session.delete(row)
            return
        if row is None:
            row = PlaygroundMessageRow(channel=message.channel, ts=message.ts)
            session.add(row)
        row.user = message.user
        row.text = message.text
        row.blocks = message.blocks
        row.thread_ts = message.thread_ts
        row.format = message.format
        row.streaming = message.streaming
        row.edited = message.edited
        row.ephemeral_to = message.ephemeral_to
