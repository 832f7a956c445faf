"""The playground's own tables: the emulated workspace's messages, open modals and App Home views, so a
restart of `python -m bot dev` keeps the conversation, and an old button still decides its call.

They have their own `MetaData` and migrations (`bot/playground/migrations/`): only a database the
playground runs on gets them. People and channels are not stored: the playground makes the same ones
at every start.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import JSON, Boolean, Index, Integer, MetaData, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from memory.tables import Base


class PlaygroundTable(Base):
    """Base of the playground's tables: the runtime's column types, the playground's own `MetaData`."""

    __abstract__ = True
    metadata = MetaData()


class PlaygroundMessageRow(PlaygroundTable):
    """A message of the emulated workspace (a person's, or the bot's), as it now reads."""

    __tablename__ = "playground_messages"
    channel: Mapped[str] = mapped_column(String(64), primary_key=True)
    ts: Mapped[str] = mapped_column(String(32), primary_key=True)
    user: Mapped[str] = mapped_column(String(64))
    text: Mapped[str] = mapped_column(Text, default="")
    blocks: Mapped[Any] = mapped_column(JSON)
    thread_ts: Mapped[str | None] = mapped_column(String(32), nullable=True)
    format: Mapped[str] = mapped_column(String(16), default="mrkdwn")
    streaming: Mapped[bool] = mapped_column(Boolean, default=False)
    edited: Mapped[bool] = mapped_column(Boolean, default=False)
    ephemeral_to: Mapped[str | None] = mapped_column(String(64), nullable=True)


class PlaygroundModalRow(PlaygroundTable):
    """A modal open for a person: `position` 0 is the bottom of their stack."""

    __tablename__ = "playground_modals"
    __table_args__ = (Index("ix_playground_modals_user", "user"),)
    id: Mapped[str] = mapped_column(String(32), primary_key=True)
    user: Mapped[str] = mapped_column(String(64))
    position: Mapped[int] = mapped_column(Integer)
    view: Mapped[Any] = mapped_column(JSON)
    errors: Mapped[Any] = mapped_column(JSON)
    hash: Mapped[str] = mapped_column(String(32))


class PlaygroundHomeViewRow(PlaygroundTable):
    """The App Home view the bot last published for a person."""

    __tablename__ = "playground_home_views"
    user: Mapped[str] = mapped_column(String(64), primary_key=True)
    view: Mapped[Any] = mapped_column(JSON)
