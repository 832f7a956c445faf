"""A small MCP server for the playground and the tests, written with the `mcp` SDK (2.x `MCPServer`).

Three tools show the three flows: `list_tickets` says it only reads (`readOnlyHint`), `close_ticket`
says it is destructive, and `open_ticket` asks the user mid-call (`elicitation/create`) for a field the
model did not give and for a confirmation; `link_account` asks in URL mode (the user goes to a page).

    python examples/mcp/server.py                    # stdio (the bot starts and stops it)
    python examples/mcp/server.py --http 8765        # Streamable HTTP on http://127.0.0.1:8765/mcp

`--test-tools` adds the tools the tests use to see what the bot does with a server that fails or asks in
odd ways: `crash` (the process exits mid-call), `hang` (it never answers), `ask_city` (asks "Which city?"
and returns the answer it got), `ask_later` (asks a question after its call has ended), `ask_long` (a
question as long as it is told) and `link_to` (a URL-mode question with the link it is given).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import uuid
from pathlib import Path
from typing import Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field

server = MCPServer("tickets", instructions="A team's ticket tracker (a demo: the tickets live in memory).")

TICKETS: dict[int, dict] = {
    1: {"id": 1, "title": "Login page is slow", "priority": "high", "open": True},
    2: {"id": 2, "title": "登录页面加载缓慢 (same, reported in Chinese)", "priority": "low", "open": True},
    3: {"id": 3, "title": "Café menu shows ¿? instead of accents", "priority": "medium", "open": True},
}


class City(BaseModel):
    city: str = Field(description="The city")


class TicketDetails(BaseModel):
    priority: Literal["low", "medium", "high"] = Field(description="How urgent the ticket is")
    confirm: bool = Field(description="Open the ticket?")


@server.tool(
    title="List tickets",
    annotations=ToolAnnotations(title="List tickets", read_only_hint=True, open_world_hint=False),
)
def list_tickets(only_open: bool = True) -> list[dict]:
    """List the team's tickets (only the open ones unless told otherwise)."""
    return [t for t in TICKETS.values() if t["open"] or not only_open]


@server.tool(
    title="Close ticket",
    annotations=ToolAnnotations(
        title="Close ticket", read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
    ),
)
def close_ticket(id: int) -> str:
    """Close a ticket by its id; it disappears from the open tickets."""
    ticket = TICKETS.get(id)
    if ticket is None:
        raise ToolError(f"there is no ticket {id}")
    ticket["open"] = False
    return f"closed ticket {id}: {ticket['title']}"


@server.tool(
    title="Open ticket",
    annotations=ToolAnnotations(
        title="Open ticket", read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
    ),
)
async def open_ticket(title: str, ctx: Context) -> str:
    """Open a new ticket; asks the user for its priority and a confirmation."""
    answer = await ctx.elicit(f"Open a ticket “{title}”? Choose its priority.", TicketDetails)
    if answer.action != "accept":
        return f"not opened: the user chose {answer.action}"
    if not answer.data.confirm:
        return "not opened: the user did not confirm"
    new_id = max(TICKETS) + 1
    TICKETS[new_id] = {"id": new_id, "title": title, "priority": answer.data.priority, "open": True}
    return f"opened ticket {new_id} ({answer.data.priority}): {title}"


@server.tool(
    title="Link my tracker account",
    annotations=ToolAnnotations(
        title="Link my tracker account", read_only_hint=False, destructive_hint=False, open_world_hint=False
    ),
)
async def link_account(ctx: Context) -> str:
    """Link the user's tracker account: the user signs in on the tracker's page (MCP URL mode)."""
    url = f"https://tickets.example/link?session={uuid.uuid4().hex[:12]}"
    answer = await ctx.elicit_url("Sign in to the tracker to link your account.", url, uuid.uuid4().hex)
    if answer.action != "accept":
        return f"not linked: the user chose {answer.action}"
    return "the sign-in page was opened; the account is linked once the sign-in completes there"


def add_test_tools() -> None:
    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def crash() -> str:
        """Exit the server's process in the middle of the call."""
        os._exit(3)

    @server.tool(annotations=ToolAnnotations(read_only_hint=True))
    async def hang() -> str:
        """Never answer."""
        await asyncio.sleep(3600)
        return "too late"

    @server.tool()
    async def ask_city(trip: str, ctx: Context, delay: float = 0) -> str:
        """Ask which city a trip goes to (after `delay` seconds); returns the trip and the answer it got."""
        await asyncio.sleep(delay)
        answer = await ctx.elicit(f"Which city? ({trip})", City)
        return f"{trip}: {answer.data.city if answer.action == 'accept' else answer.action}"

    @server.tool()
    async def ask_long(size: int, ctx: Context) -> str:
        """Ask "Which city?" after a preamble of `size` characters; returns the answer it got."""
        line = "旅行の計画 · 여행 계획 · 旅行计划 <&> "
        preamble = (line * (size // len(line) + 1))[:size]
        answer = await ctx.elicit(f"{preamble}\nWhich city?", City)
        return f"long question: {answer.data.city if answer.action == 'accept' else answer.action}"

    @server.tool()
    async def link_to(url: str, ctx: Context) -> str:
        """Ask in URL mode with the link it is given; returns the answer's action."""
        answer = await ctx.elicit_url("Sign in on this page.", url, uuid.uuid4().hex)
        return f"link: {answer.action}"

    later: set[asyncio.Task[None]] = set()

    @server.tool()
    async def ask_later(path: str, ctx: Context) -> str:
        """Return at once, then ask a question that belongs to no call; write the answer's action to `path`."""
        session = ctx.request_context.session

        async def ask() -> None:
            await asyncio.sleep(0.3)
            schema = {"type": "object", "properties": {"city": {"type": "string"}}}
            try:
                outcome = (await session.elicit_form("Which city? (asked after the call ended)", schema)).action
            except Exception as exc:  # noqa: BLE001 - what the client answered, for the test to read
                outcome = f"error: {exc}"
            Path(path).write_text(outcome, encoding="utf-8")

        task = asyncio.get_running_loop().create_task(ask())
        later.add(task)
        task.add_done_callback(later.discard)
        return "I will ask later"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--http", type=int, metavar="PORT", help="serve Streamable HTTP on 127.0.0.1:PORT/mcp")
    parser.add_argument("--test-tools", action="store_true", help="add the tools the tests use")
    options = parser.parse_args()
    if options.test_tools:
        add_test_tools()
    if options.http is not None:
        server.settings.log_level = "WARNING"
        server.run("streamable-http", host="127.0.0.1", port=options.http)
    else:
        server.run()


if __name__ == "__main__":
    main()
