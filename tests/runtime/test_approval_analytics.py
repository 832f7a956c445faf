"""The approval analytics (issue 44) of a call inside a sub-agent: the supervisor's call passes the decision
down to the inner call, and the wait is counted once, as the inner tool's, in `python -m bot audit
--summary` and in `/metrics`' histogram; on SQLite and PostgreSQL."""

from __future__ import annotations

import json

import pytest
from prometheus_client import REGISTRY

from bot.agent import Approve, Decided
from tests.memory.chain_process import build_chain
from tests.runtime.helpers import collect, finish_reason
from tests.support.clock import StoppedClock
from tests.support.processes import bot_command
from tests.support.scripted_model import call, reply, tool_calls

OPTS = {"thread_id": "th-analytics", "resource_id": "U1"}


@pytest.fixture
def clock():
    return StoppedClock()


def waits_counted(tool: str, outcome: str) -> float:
    return REGISTRY.get_sample_value("bot_time_to_decision_seconds_count", {"tool": tool, "outcome": outcome}) or 0.0


async def test_a_sub_agents_approval_is_counted_once(model, storage, clock):
    top, _leaf = build_chain(storage, depth=2)
    model.chat.push(
        tool_calls(call("agent-leaf", {"prompt": "delete record 7"}, id="t1")),
        tool_calls(call("delete-record", {"id": "7"}, id="l1")),
    )
    stream = await top.stream("Delete record 7", **OPTS)
    assert finish_reason(await collect(stream)) == "suspended"
    before = waits_counted("delete-record", "approved")

    clock.advance(12)
    model.chat.push(reply("leaf: deleted"), reply("top: deleted"))
    result = await top.decide_as(stream.run_id, "t1", Approve(), actor="U2", via="api")
    assert isinstance(result, Decided)
    assert finish_reason(await collect(result.stream)) == "stop"

    code, out, err = await bot_command("audit", "--summary", "--format", "jsonl", database_url=storage.url)
    assert code == 0, err
    rows = {(row["kind"], row["name"]): row for row in map(json.loads, out.splitlines())}
    assert set(rows) == {("tool", "delete-record"), ("person", "U2")}
    for row in rows.values():
        assert (row["decided"], row["approved"], row["p50"], row["waiting"]) == (1, 1, 12.0, 0)
    assert waits_counted("delete-record", "approved") - before == 1
