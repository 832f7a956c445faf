"""The demo agent's tables: records it can list and delete, and the refunds it issues.

They live in the bot's own database so the effect of an approved call is visible; they have their own
`MetaData` and migrations (`bot/demo/migrations/`), applied only where the demo runs.
"""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import Integer, MetaData, Numeric, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from memory.tables import Base, utcnow


class DemoTable(Base):
    """Base of the demo's tables: the runtime's column types, the demo's own `MetaData`."""

    __abstract__ = True
    metadata = MetaData()


class DemoRecordRow(DemoTable):
    """A record the demo agent can list and (with approval) delete."""

    __tablename__ = "demo_records"
    id: Mapped[int] = mapped_column(Integer, primary_key=True)
    title: Mapped[str] = mapped_column(String(255))
    created_at: Mapped[datetime] = mapped_column(default=utcnow)


class DemoRefundRow(DemoTable):
    """A refund the demo agent issued (after approval)."""

    __tablename__ = "demo_refunds"
    id: Mapped[int] = mapped_column(Integer, primary_key=True, autoincrement=True)
    order_id: Mapped[str] = mapped_column(String(64))
    amount: Mapped[float] = mapped_column(Numeric(12, 2))
    reason: Mapped[str | None] = mapped_column(Text)
    created_at: Mapped[datetime] = mapped_column(default=utcnow)
