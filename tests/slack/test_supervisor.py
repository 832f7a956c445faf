"""An approval inside a sub-agent surfaces in the supervisor's thread with the inner tool, and a click
decides it."""

from __future__ import annotations

from bot.agent import Agent
from bot.demo.tools import build_demo_tools
from tests.support.scripted_model import call, reply, tool_calls

from .harness import MODEL, record_ids, running_bot


def supervisor(storage):
    data_agent = Agent(id="data_agent", model=MODEL, tools=build_demo_tools(storage), description="Owns the records")
    return Agent(id="supervisor", model=MODEL, agents=[data_agent], instructions="Delegate record work.")


async def test_sub_agent_approval_is_shown_and_decided_in_the_thread(database_url, slack, model):
    model.chat.push(
        tool_calls(call("agent-data_agent", {"prompt": "delete record 3"}, id="sup_1")),
        tool_calls(call("delete-record", {"id": 3}, id="inner_1")),
        reply("Record 3 deleted."),
        reply("Done: record 3 is gone."),
    )
    async with running_bot(database_url=database_url, slack=slack, agent_factory=supervisor) as bot:
        await bot.mention("delete record 3")
        message = await bot.approval_message()
        assert "delete-record" in message.all_text and '"id": 3' in message.all_text
        assert "Delete a record by ID" in message.all_text  # the inner tool's description
        assert "Will delete 1 record: #3" in message.all_text  # the inner tool's preview, through the supervisor

        assert "tool_edit_args" not in message.action_ids()  # the inner call is decided as shown
        ref = message.button_value("tool_approve")
        await bot.sender.click(message, "tool_edit_args", user="U2", value=ref)  # a forged or stale click
        note = await slack.wait_for("chat.postEphemeral")
        assert "The arguments of `delete-record` cannot be edited here" in note[0].params["text"]

        await bot.sender.click(message, "tool_approve", user="U2")
        stops = await slack.wait_for("chat.stopStream")
        assert slack.message("C1", stops[-1].params["ts"]).text == "Done: record 3 is gone."
        assert "Approved" in message.all_text and message.action_ids() == []
        assert await record_ids(bot) == [1, 2, 4, 5]
