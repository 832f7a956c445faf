"""Drive a running playground the way its page does: over HTTP, through `/play/*`, as a chosen person."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

import aiohttp
from sqlalchemy import select

from bot.demo.tables import DemoRecordRow
from bot.slack_emulator import blocks_text

GENERAL = "C0GENERAL"
ALICE = "UALICE"
BOB = "UBOB"


class PlaygroundPage:
    """One browser on the playground at `url`."""

    def __init__(self, url: str, session: aiohttp.ClientSession):
        self.url = url
        self.session = session

    async def state(self, user: str = ALICE, *, since: int | None = None) -> dict[str, Any]:
        query = f"?user={user}" + (f"&since={since}" if since is not None else "")
        async with self.session.get(f"{self.url}/play/state{query}") as response:
            assert response.status == 200, await response.text()
            return await response.json()

    async def post(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        async with self.session.post(self.url + path, json=body) as response:
            text = await response.text()
            return response.status, (await response.json() if response.content_type == "application/json" else text)

    async def say(self, text: str, *, user: str = ALICE, channel: str = GENERAL, thread_ts: str | None = None) -> str:
        """Post a message as the page does; returns its ts."""
        status, body = await self.post(
            "/play/messages", {"user": user, "channel": channel, "text": text, "thread_ts": thread_ts}
        )
        assert status == 200, body
        assert all(code == 200 for code in body["bot_status"]), body
        return body["ts"]

    async def click(self, message: dict[str, Any], action_id: str, *, user: str = ALICE) -> tuple[int, Any]:
        """Click the button `action_id` of `message` (as the page last showed it)."""
        button = button_of(message, action_id)
        assert button is not None, f"no {action_id} button in {message}"
        block_id, element = button
        return await self.post(
            "/play/actions",
            {
                "user": user,
                "channel": message["channel"],
                "ts": message["ts"],
                "block_id": block_id,
                "action_id": action_id,
                "value": element.get("value"),
            },
        )

    async def submit(self, modal: dict[str, Any], values: dict[str, Any], *, user: str = ALICE) -> dict[str, Any]:
        """Submit the open modal with `values` (block_id -> typed text, chosen option value, or a list)."""
        raw = {}
        for block in modal["view"]["blocks"]:
            if block.get("type") == "input":
                raw[block["block_id"]] = {block["element"]["action_id"]: values.get(block["block_id"])}
        status, body = await self.post(f"/play/views/{modal['id']}/submit", {"user": user, "values": raw})
        assert status == 200, body
        return body

    async def wait_for(
        self, probe: Callable[[dict[str, Any]], Any], *, user: str = ALICE, timeout: float = 15.0, what: str = "it"
    ) -> Any:
        """Long-poll what `user` sees until `probe(state)` returns something truthy; return that."""
        deadline = time.monotonic() + timeout
        state = await self.state(user)
        while True:
            found = probe(state)
            if found:
                return found
            if time.monotonic() > deadline:
                raise AssertionError(f"timed out waiting for {what}; {user} sees: {summary(state)}")
            try:
                state = await asyncio.wait_for(self.state(user, since=state["version"]), deadline - time.monotonic())
            except TimeoutError:
                state = await self.state(user)

    async def settle(self, quiet: float = 0.4, timeout: float = 15.0) -> None:
        """Wait until the workspace stops changing and no thread shows a status (the bot is done)."""
        deadline = time.monotonic() + timeout
        last = -1
        while time.monotonic() < deadline:
            state = await self.state(ALICE)
            if state["version"] == last and not state["statuses"]:
                return
            last = state["version"]
            await asyncio.sleep(quiet)


# --- reading what the page shows ----------------------------------------------------------------
def thread(state: dict[str, Any], thread_ts: str, channel: str = GENERAL) -> list[dict[str, Any]]:
    """The replies of a thread (not its parent), oldest first."""
    return [
        m for m in state["messages"] if m["channel"] == channel and m["thread_ts"] == thread_ts and m["ts"] != thread_ts
    ]


def from_bot(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [m for m in messages if m.get("bot_id")]


def button_of(message: dict[str, Any], action_id: str) -> tuple[str, dict[str, Any]] | None:
    for block in message["blocks"]:
        for element in block.get("elements", []) if block.get("type") == "actions" else []:
            if element.get("action_id") == action_id:
                return block["block_id"], element
    return None


def action_ids(message: dict[str, Any]) -> list[str]:
    return [
        element.get("action_id")
        for block in message["blocks"]
        if block.get("type") == "actions"
        for element in block.get("elements", [])
    ]


def shown_text(message: dict[str, Any]) -> str:
    """The message's text and every text of its blocks."""
    out = [message["text"]]

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            if node.get("type") in ("mrkdwn", "plain_text") and isinstance(node.get("text"), str):
                out.append(node["text"])
            else:
                for value in node.values():
                    walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(message["blocks"])
    return "\n".join(out)


def summary(state: dict[str, Any]) -> list[str]:
    return [f"{m['channel']}/{m['thread_ts']}/{m['user']}: {shown_text(m)[:120]!r}" for m in state["messages"]]


async def record_ids(playground) -> list[int]:
    async with playground.storage.session() as session:
        return list(await session.scalars(select(DemoRecordRow.id).order_by(DemoRecordRow.id)))


def home_text(state: dict[str, Any]) -> str:
    return blocks_text((state.get("home") or {}).get("blocks"))


def home_button(state: dict[str, Any], action_id: str, value: str | None = None) -> dict[str, Any] | None:
    for block in (state.get("home") or {}).get("blocks", []):
        elements = block.get("elements", []) if block["type"] == "actions" else [block.get("accessory") or {}]
        for element in elements:
            if element.get("action_id") == action_id and value in (None, element.get("value")):
                return {"block_id": block.get("block_id"), "action_id": action_id, "value": element.get("value")}
    return None


# --- drawing blocks with the page's blockkit.js under node --------------------------------------
NODE_DOM = """
const fs = require("fs");
class Node {
  constructor(tag) { this.tag = tag; this.children = []; this.dataset = {}; this.className = ""; this.innerHTML = ""; }
  appendChild(child) { this.children.push(child); return child; }
  addEventListener() {}
  insertAdjacentHTML() {}
}
global.document = { createElement: (tag) => new Node(tag) };
const BlockKit = new Function(fs.readFileSync(process.argv[2], "utf8") + "; return BlockKit;")();
const blocks = JSON.parse(fs.readFileSync(0, "utf8"));
const found = [];
const walk = (n) => {
  if (n.tag === "input") found.push({ type: n.type, value: n.value, actionId: n.dataset.actionId, disabled: !!n.disabled });
  if (String(n.className).includes("bk-unsupported")) found.push({ unsupported: n.innerHTML });
  n.children.forEach(walk);
};
walk(BlockKit.blocks(blocks, { nameOf: (id) => id, channelName: (id) => id, pressed: {} }, () => Promise.resolve()));
console.log(JSON.stringify(found));
"""
