"""The demo agent's tools. They act on the bot's own database, so an approved call leaves a visible
trace: a record gone from `list-records`, a row in the refund ledger."""

from __future__ import annotations

import hashlib
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any, cast

from pydantic import BaseModel, Field
from sqlalchemy import CursorResult, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from memory import Storage
from memory.limits import width
from tools import Tool, ToolContext, create_tool

from .migrations import SCHEMA
from .tables import DemoRecordRow, DemoRefundRow

SEED_TITLES = ("Quarterly report", "Customer list", "Old invoices", "Meeting notes", "Test data")


class DeleteRecordInput(BaseModel):
    id: int = Field(description="ID of the record to delete")


_AMOUNT = DemoRefundRow.amount.type
"""The ledger's `Numeric(precision, scale)`: an amount must fit it, or PostgreSQL refuses the row."""


class IssueRefundInput(BaseModel):
    # bounded by the ledger's columns, so an order id or amount it cannot store never reaches execute
    order_id: str = Field(max_length=width(DemoRefundRow.order_id), description="The order to refund")
    amount: float = Field(
        gt=0, lt=10 ** (_AMOUNT.precision - _AMOUNT.scale), description="Amount to refund, in dollars"
    )
    reason: str | None = Field(default=None, description="Why the refund is issued")


class WeatherInput(BaseModel):
    city: str | None = Field(default=None, description="City name; leave empty to ask the user")


class WeatherAnswer(BaseModel):
    city: str = Field(description="The city to get the weather for")


@asynccontextmanager
async def _session(storage: Storage) -> AsyncIterator[AsyncSession]:
    """A transaction on the demo's tables, created on first use (checked once per process)."""
    await storage.migrate(SCHEMA)
    async with storage.session() as session:
        yield session


async def seed_demo_records(storage: Storage) -> None:
    """Put a few records in an empty table, so there is something to list and delete."""
    async with _session(storage) as session:
        if await session.scalar(select(func.count()).select_from(DemoRecordRow)):
            return
        session.add_all(DemoRecordRow(id=i, title=title) for i, title in enumerate(SEED_TITLES, start=1))


def build_demo_tools(storage: Storage) -> list[Tool]:
    async def list_records(_input: Any, _ctx: ToolContext) -> dict[str, Any]:
        async with _session(storage) as session:
            rows = await session.scalars(select(DemoRecordRow).order_by(DemoRecordRow.id))
            return {"records": [{"id": row.id, "title": row.title} for row in rows]}

    async def delete_record(input: DeleteRecordInput, _ctx: ToolContext) -> dict[str, Any]:
        await storage.migrate(SCHEMA)
        async with storage.statement() as connection:  # one round trip: the title comes back with the delete
            gone = await connection.execute(
                delete(DemoRecordRow).where(DemoRecordRow.id == input.id).returning(DemoRecordRow.title)
            )
            title = gone.scalar_one_or_none()
        return {"deleted": title is not None, "id": input.id, "title": title}

    async def undo_delete(input: DeleteRecordInput, result: Any) -> dict[str, Any]:
        """Put the deleted record back, with the title the deletion returned."""
        if not isinstance(result, dict) or not result.get("deleted"):
            return {"restored": False, "id": input.id, "why": "nothing was deleted"}
        async with _session(storage) as session:
            session.add(DemoRecordRow(id=input.id, title=str(result.get("title") or "")))
        return {"restored": True, "id": input.id}

    async def preview_delete(input: DeleteRecordInput, _ctx: ToolContext) -> str:
        """The dry run of `delete-record`: which record would go, read only."""
        await storage.migrate(SCHEMA)
        records = select(func.count()).select_from(DemoRecordRow).scalar_subquery()
        async with storage.read() as connection:  # the record and how many there are, in one read
            row = (
                await connection.execute(select(DemoRecordRow.title, records).where(DemoRecordRow.id == input.id))
            ).first()
        if row is None:
            return f"There is no record {input.id}: nothing would be deleted."
        title, others = row
        return f"Will delete 1 record: #{input.id} “{title}” ({others - 1} would remain)."

    async def issue_refund(input: IssueRefundInput, _ctx: ToolContext) -> dict[str, Any]:
        async with _session(storage) as session:
            refund = DemoRefundRow(order_id=input.order_id, amount=input.amount, reason=input.reason)
            session.add(refund)
            await session.flush()
            refund_id = refund.id
        return {"refund_id": refund_id, "order_id": input.order_id, "amount": input.amount}

    async def undo_refund(input: IssueRefundInput, result: Any) -> dict[str, Any]:
        """Take the refund back: its row goes (a real tool would reverse it at the payment provider)."""
        refund_id = result.get("refund_id") if isinstance(result, dict) else None
        async with _session(storage) as session:
            gone = await session.execute(delete(DemoRefundRow).where(DemoRefundRow.id == refund_id))
        return {"reversed": cast(CursorResult[Any], gone).rowcount == 1, "refund_id": refund_id}

    async def get_weather(input: WeatherInput, ctx: ToolContext) -> Any:
        answer = ctx.agent.resume_data
        city = input.city or getattr(answer, "city", None) or (answer.get("city") if isinstance(answer, dict) else None)
        if not city:
            return await ctx.agent.suspend({"question": "Which city?"})
        # Deterministic made-up weather: the demo needs no network.
        seed = int(hashlib.sha256(city.lower().encode()).hexdigest(), 16)
        return {
            "city": city,
            "temperature_c": seed % 35 - 5,
            "conditions": ["sunny", "cloudy", "rainy", "windy"][seed % 4],
        }

    return [
        create_tool(
            id="list-records",
            description="List the records in the database (id and title)",
            input_schema={"type": "object", "properties": {}, "additionalProperties": False},
            execute=list_records,
        ),
        create_tool(
            id="delete-record",
            description="Delete a record by ID",
            input_schema=DeleteRecordInput,
            output_schema={"type": "object", "properties": {"deleted": {"type": "boolean"}}},
            require_approval=True,
            execute=delete_record,
            preview=preview_delete,
            undo=undo_delete,
        ),
        create_tool(
            id="issue-refund",
            description="Issue a refund for an order; the money leaves the company",
            input_schema=IssueRefundInput,
            require_approval=True,
            execute=issue_refund,
            undo=undo_refund,
        ),
        create_tool(
            id="get-weather",
            description="Get the current weather in a city; asks the user for the city when none is given",
            input_schema=WeatherInput,
            suspend_schema={"type": "object", "properties": {"question": {"type": "string"}}, "required": ["question"]},
            resume_schema=WeatherAnswer,
            execute=get_weather,
        ),
    ]
