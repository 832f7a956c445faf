"""The same app over Socket Mode: Socket Mode envelopes dispatched through Bolt's AsyncSocketModeHandler
(no signing secret; each envelope is acknowledged), with the same de-duplication and buttons."""

from __future__ import annotations

import json
import logging

from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler
from slack_sdk.socket_mode.request import SocketModeRequest

from bot.demo import build_demo_agent, seed_demo_records
from bot.slack import create_slack_app
from bot.slack.stores import prepare_slack_tables
from bot.slack_emulator.app_requests import action_of, block_actions, event_callback
from memory import Memory, Storage
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import SignedSender

from .harness import MODEL


class RecordingSocketClient:
    """Stands in for the WebSocket connection: records the acknowledgements the handler sends."""

    def __init__(self):
        self.logger = logging.getLogger("socket-test")
        self.acks: list[str] = []

    async def send_socket_mode_response(self, response) -> None:
        self.acks.append(response.envelope_id)


async def test_socket_mode_mention_approval_and_retry(database_url, slack, model):
    model.chat.push(tool_calls(call("delete-record", {"id": 3}, id="call_1")), reply("Deleted."))
    storage = Storage(database_url)
    await prepare_slack_tables(storage)  # what serve_socket does at its start (this test plays it)
    await seed_demo_records(storage)
    agent = build_demo_agent(storage, model=MODEL).attach(storage=storage, memory=Memory(storage))
    app = create_slack_app(agent=agent, storage=storage, token="xoxb-test", api_url=slack.api_url)
    handler = AsyncSocketModeHandler(app, "xapp-test")
    connection = RecordingSocketClient()
    payloads = SignedSender("unused", "unused", slack=slack)
    try:
        event = payloads.mention("delete record 3")
        body = event_callback(event, event_id="EvSOCKET1")
        for retry in (0, 1):  # Slack redelivers an envelope it thinks was lost: same event_id
            await handler.handle(
                connection,
                SocketModeRequest(type="events_api", envelope_id=f"env-{retry}", payload=body, retry_attempt=retry),
            )
        assert connection.acks == ["env-0", "env-1"]
        posted = await slack.wait_for("chat.postMessage", lambda c: "tool_approve" in str(c.params.get("blocks")))
        message = slack.posted_by(posted[0])
        await slack.settle()
        assert len(model.chat.requests) == 1

        action = action_of(message, "tool_approve")
        assert action is not None
        click = block_actions("U2", message, action, channel=slack.workspace.channels["C1"], trigger_id="t")
        await handler.handle(
            connection,
            SocketModeRequest(type="interactive", envelope_id="env-click", payload=json.loads(json.dumps(click))),
        )
        assert "env-click" in connection.acks
        stops = await slack.wait_for("chat.stopStream")
        assert slack.message("C1", stops[0].params["ts"]).text == "Deleted."
        assert "Approved" in message.all_text
        await slack.settle()
    finally:
        await handler.close_async()
        await agent.model_client.close()
        await storage.close()
