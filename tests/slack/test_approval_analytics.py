"""How approvals are really decided (issue 44, approval analytics): a scripted sequence of decisions through
the Slack emulation and the HTTP API, on a clock that moves only when told, gives exactly the expected
numbers in the admin's App Home, `python -m bot audit --summary`, `/metrics` and the traces, on SQLite and
PostgreSQL."""

from __future__ import annotations

import json

import pytest

from memory import Storage
from tests.support.clock import StoppedClock
from tests.support.processes import bot_command
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.waiting import until

from .harness import (
    API_TOKEN,
    RunningBot,
    ask_to_delete,
    decide_path,
    home_click,
    home_of,
    open_home,
    request,
    running_bot,
    scrape,
    value,
    waiting_call,
)

pytestmark = pytest.mark.both_databases


@pytest.fixture
def clock():
    """Every time to decision below is exact: the clock stands still between the test's `advance` calls."""
    return StoppedClock()


@pytest.fixture
async def analytics_bot(database_url, slack, model, clock):
    """U1 (English) and UKO (Korean) are admins."""
    async with running_bot(
        database_url=database_url, slack=slack, admins=("U1", "UKO"), api_token=API_TOKEN, clock=clock
    ) as running:
        yield running


async def decisions(bot: RunningBot) -> int:
    lines = await bot.storage.audit_log.entries()
    return sum(1 for line in lines if line.action in ("approved", "declined", "expired"))


async def settled(bot: RunningBot, count: int) -> None:
    """Wait until `count` decisions are in the audit trail and what they set off is done."""
    await until(lambda: _at_least(bot, count), what=f"{count} decisions")
    await bot.slack.settle()


async def _at_least(bot: RunningBot, count: int) -> bool:
    return await decisions(bot) >= count


def ask_to_refund(model, order: str) -> None:
    model.chat.push(
        tool_calls(call("issue-refund", {"order_id": order, "amount": 30}, id="call_r")), reply("Refunded.")
    )


async def scripted_decisions(bot: RunningBot, model, clock: StoppedClock) -> None:
    """delete-record: approved after 2 s (U2), declined after 30 s (U2), approved after 4 s (U3), expired
    after 60 s; issue-refund (approver U3): approved after 10 s (U3, HTTP API), one still waiting."""
    for args in (("delete-record", "--expires", "60"), ("issue-refund", "--approvers", "U3")):
        assert (await bot_command("policy", "set", *args, database_url=bot.storage.url))[0] == 0

    ask_to_delete(model, 3)
    await bot.mention("delete record 3", user="U1")
    message = await bot.approval_message(count=1)
    clock.advance(2)
    await bot.sender.click(message, "tool_approve", user="U2")
    await settled(bot, 1)

    ask_to_delete(model, 4)
    await bot.mention("delete record 4", user="U1")
    message = await bot.approval_message(count=2)
    clock.advance(30)
    await bot.sender.click(message, "tool_decline", user="U2")
    await settled(bot, 2)

    ask_to_refund(model, "A-1")
    await bot.mention("refund order A-1", user="U1")
    await bot.approval_message(count=3)
    run_id, call_id = await waiting_call(bot)
    clock.advance(10)
    status, _ = await request(bot, "POST", decide_path(run_id, call_id, "approve"), body={"approver": "U3"})
    assert status == 200
    await settled(bot, 3)

    ask_to_delete(model, 5)
    await bot.mention("delete record 5", user="U1")
    message = await bot.approval_message(count=4)
    clock.advance(4)
    await bot.sender.click(message, "tool_approve", user="U3")
    await settled(bot, 4)

    ask_to_delete(model, 2)
    await bot.mention("delete record 2", user="U1")
    await bot.approval_message(count=5)
    clock.advance(61)
    assert len(await bot.agent.expire_waiting_approvals()) == 1
    await settled(bot, 5)

    ask_to_refund(model, "B-2")
    await bot.mention("refund order B-2", user="U1")
    await bot.approval_message(count=6)


EXPECTED = [
    {"kind": "tool", "name": "delete-record", "waiting": 0, "decided": 3, "approved": 2, "declined": 1,
     "expired": 1, "cancelled": 0, "undone": 0, "quick": 2, "p50": 4.0, "p95": 30.0},
    {"kind": "tool", "name": "issue-refund", "waiting": 1, "decided": 1, "approved": 1, "declined": 0,
     "expired": 0, "cancelled": 0, "undone": 0, "quick": 0, "p50": 10.0, "p95": 10.0},
    {"kind": "person", "name": "U2", "waiting": 0, "decided": 2, "approved": 1, "declined": 1,
     "expired": 0, "cancelled": 0, "undone": 0, "quick": 1, "p50": 2.0, "p95": 30.0},
    {"kind": "person", "name": "U3", "waiting": 1, "decided": 2, "approved": 2, "declined": 0,
     "expired": 0, "cancelled": 0, "undone": 0, "quick": 1, "p50": 4.0, "p95": 10.0},
]  # fmt: skip
"""Nearest rank: delete-record's times 2, 4, 30 give p50 4 and p95 30; quick is at most 5 s (the default)."""


async def test_the_summary_counts_a_scripted_sequence_exactly(admin_bot: RunningBot, model, clock):
    await scripted_decisions(admin_bot, model, clock)
    url = admin_bot.storage.url

    code, out, err = await bot_command("audit", "--summary", "--format", "jsonl", database_url=url)
    assert code == 0, err
    assert [json.loads(line) for line in out.splitlines()] == EXPECTED

    code, out, err = await bot_command("audit", "--summary", database_url=url)
    assert code == 0, err
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.strip()}
    assert rows["TOOL"] == ["TOOL", "WAITING", "DECIDED", "P50", "P95", "DECLINED", "EXPIRED", "CANCELLED",
                            "UNDONE", "QUICK"]  # fmt: skip
    assert rows["delete-record"] == ["delete-record", "0", "3", "4", "s", "30", "s", "1", "1", "0", "0", "2"]
    assert rows["U3"] == ["U3", "1", "2", "4", "s", "10", "s", "0", "0", "0", "0", "1"]

    code, out, err = await bot_command(
        "audit", "--summary", "--tool", "issue-refund", "--format", "csv", database_url=url
    )
    assert code == 0, err
    assert out.splitlines()[1].startswith("tool,issue-refund,1,1,1,0,0,0,0,0,10.0,10.0")


async def test_the_quick_threshold_is_a_setting(admin_bot: RunningBot, model, clock, monkeypatch):
    await scripted_decisions(admin_bot, model, clock)
    monkeypatch.setenv("BOT_QUICK_APPROVAL_SECONDS", "1.5")
    code, out, err = await bot_command("audit", "--summary", "--format", "jsonl", database_url=admin_bot.storage.url)
    assert code == 0, err
    assert [json.loads(line)["quick"] for line in out.splitlines()] == [0, 0, 0, 0]
    monkeypatch.setenv("BOT_QUICK_APPROVAL_SECONDS", "10")
    code, out, err = await bot_command("audit", "--summary", "--format", "jsonl", database_url=admin_bot.storage.url)
    assert [json.loads(line)["quick"] for line in out.splitlines()] == [2, 1, 1, 2]


async def test_every_mistake_of_the_summary_is_one_line(database_url, monkeypatch):
    for args, expected in [
        (("audit", "--summary", "--since", "yesterday"), "not an ISO-8601 date or time"),
        (("audit", "--summary", "--format", "xml"), "'xml' is not one of table, jsonl, csv"),
    ]:
        code, out, err = await bot_command(*args, database_url=database_url)
        assert code == 2 and expected in err.strip().splitlines()[-1], (args, err)
        assert "Traceback" not in err and out == ""
    monkeypatch.setenv("BOT_QUICK_APPROVAL_SECONDS", "soon")
    code, out, err = await bot_command("audit", "--summary", database_url=database_url)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "BOT_QUICK_APPROVAL_SECONDS" in err, err
    monkeypatch.setenv("BOT_QUICK_APPROVAL_SECONDS", "-1")
    code, out, err = await bot_command("audit", "--summary", database_url=database_url)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "BOT_QUICK_APPROVAL_SECONDS" in err, err
    monkeypatch.delenv("BOT_QUICK_APPROVAL_SECONDS")
    code, out, err = await bot_command("audit", "--summary", database_url=database_url)
    assert code == 0 and "TOOL: none yet" in out and "PERSON: none yet" in out, err


async def test_metrics_have_the_time_to_decision_by_tool_and_outcome(admin_bot: RunningBot, model, clock):
    before = await scrape(admin_bot)
    await scripted_decisions(admin_bot, model, clock)
    after = await scrape(admin_bot)

    def moved(name: str, **labels: str) -> float:
        return value(after, name, **labels) - value(before, name, **labels)

    histogram = "bot_time_to_decision_seconds"
    for tool, outcome, count, total in [
        ("delete-record", "approved", 2, 6.0),
        ("delete-record", "declined", 1, 30.0),
        ("delete-record", "expired", 1, 61.0),
        ("issue-refund", "approved", 1, 10.0),
    ]:
        assert moved(f"{histogram}_count", tool=tool, outcome=outcome) == count, (tool, outcome)
        assert moved(f"{histogram}_sum", tool=tool, outcome=outcome) == pytest.approx(total), (tool, outcome)
    assert moved(f"{histogram}_bucket", tool="delete-record", outcome="approved", le="2.0") == 1
    assert moved(f"{histogram}_bucket", tool="delete-record", outcome="approved", le="5.0") == 2
    assert moved(f"{histogram}_bucket", tool="issue-refund", outcome="approved", le="5.0") == 0


async def test_the_wait_for_a_person_is_a_span_of_its_own(admin_bot: RunningBot, model, clock):
    pytest.importorskip("opentelemetry.sdk.trace", reason="the otel extra is not installed")
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from bot import telemetry

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.enable(provider)
    try:
        await scripted_decisions(admin_bot, model, clock)
    finally:
        telemetry.disable()
        provider.shutdown()

    spans = exporter.get_finished_spans()
    waits = sorted((s for s in spans if s.name.startswith("await_decision ")), key=lambda s: s.end_time)
    seen = [
        (s.name, s.attributes["bot.approval.outcome"], s.attributes.get("bot.approval.decided_by"),
         s.attributes["bot.approval.via"], s.attributes["bot.wait.seconds"], (s.end_time - s.start_time) / 1e9)
        for s in waits
    ]  # fmt: skip
    assert seen == [
        ("await_decision delete-record", "approved", "U2", "button", 2.0, 2.0),
        ("await_decision delete-record", "declined", "U2", "button", 30.0, 30.0),
        ("await_decision issue-refund", "approved", "U3", "api", 10.0, 10.0),
        ("await_decision delete-record", "approved", "U3", "button", 4.0, 4.0),
        ("await_decision delete-record", "expired", None, "expiry", 61.0, 61.0),
    ]
    turns = {s.context.span_id: s for s in spans if s.name == "invoke_agent demo-agent"}
    for wait in waits:
        assert wait.attributes["bot.approval.decision"] in ("approved", "declined", "expired")
        assert wait.attributes["bot.wait.kind"] == "approval"
        assert wait.attributes["gen_ai.tool.call.id"] in ("call_1", "call_r")
        # under the turn that carried the decision out, in the same run
        assert wait.parent is not None and wait.parent.span_id in turns
        assert turns[wait.parent.span_id].attributes["bot.run.id"] == wait.attributes["bot.run.id"]


def table_of(view: dict) -> dict[str, dict[str, str]]:
    """The modal's rows: each section's text -> its fields, "*Name*\\nvalue" read as name -> value."""
    rows = {}
    for block in view["blocks"]:
        if block["type"] == "section" and block.get("fields"):
            cells = (field["text"].split("\n", 1) for field in block["fields"])
            rows[block["text"]["text"]] = {name.strip("*"): cell for name, cell in cells}
    return rows


async def opened_analytics(bot: RunningBot, user: str, count: int) -> dict:
    await open_home(bot, user)
    home = await home_of(bot, user)
    buttons = [e["action_id"] for b in home["blocks"] if b["type"] == "actions" for e in b["elements"]]
    assert "approval_analytics" in buttons
    await home_click(bot, user, "approval_analytics", "open")
    opened = await bot.slack.wait_for("views.open", count=count)
    view = opened[count - 1].params["view"]
    return json.loads(view) if isinstance(view, str) else view


async def test_the_admin_opens_the_numbers_from_the_home_in_their_language(analytics_bot: RunningBot, model, clock):
    bot = analytics_bot
    await scripted_decisions(bot, model, clock)

    view = await opened_analytics(bot, "U1", 1)
    assert view["title"]["text"] == "Approval analytics"
    assert table_of(view) == {
        "*delete-record*": {"Waiting": "0", "Decided": "3", "Time to decision": "p50 4 s · p95 30 s",
                            "Quick approvals": "2", "Declined": "1", "Expired": "1", "Cancelled": "0", "Undone": "0"},
        "*issue-refund*": {"Waiting": "1", "Decided": "1", "Time to decision": "p50 10 s · p95 10 s",
                           "Quick approvals": "0", "Declined": "0", "Expired": "0", "Cancelled": "0", "Undone": "0"},
        "<@U2>": {"Waiting": "0", "Decided": "2", "Time to decision": "p50 2 s · p95 30 s",
                  "Quick approvals": "1", "Declined": "1", "Expired": "0", "Cancelled": "0", "Undone": "0"},
        "<@U3>": {"Waiting": "1", "Decided": "2", "Time to decision": "p50 4 s · p95 10 s",
                  "Quick approvals": "1", "Declined": "0", "Expired": "0", "Cancelled": "0", "Undone": "0"},
    }  # fmt: skip
    assert "within 5 s of the request" in json.dumps(view)

    korean = await opened_analytics(bot, "UKO", 2)
    assert korean["title"]["text"] == "승인 분석"
    assert table_of(korean)["*delete-record*"]["결정까지 걸린 시간"] == "p50 4초 · p95 30초"
    assert table_of(korean)["<@U3>"]["빠른 승인"] == "1"


async def test_no_one_but_an_admin_sees_the_numbers(analytics_bot: RunningBot, model, clock):
    bot = analytics_bot
    await open_home(bot, "U2")
    home = await home_of(bot, "U2")
    assert "approval_analytics" not in json.dumps(home)
    await home_click(bot, "U2", "approval_analytics", "open")  # a forged click
    await bot.slack.settle()
    assert bot.slack.calls_of("views.open") == []


async def test_four_eyes_count_each_approver_and_the_call_once(admin_bot: RunningBot, model, clock):
    """Two approvals needed: each person's row has their own approval; the tool's row has the call once,
    timed to its last approval, and a call that has one approval of two still waits."""
    bot = admin_bot
    code, _, err = await bot_command(
        "policy", "set", "delete-record", "--approvals-required", "2", database_url=bot.storage.url
    )
    assert code == 0, err
    ask_to_delete(model, 3)
    await bot.mention("delete record 3", user="U1")
    message = await bot.approval_message(count=1)
    clock.advance(3)
    await bot.sender.click(message, "tool_approve", user="U2")
    await settled(bot, 1)
    clock.advance(5)
    await bot.sender.click(message, "tool_approve", user="U3")
    await settled(bot, 2)

    ask_to_delete(model, 4)
    await bot.mention("delete record 4", user="U1")
    message = await bot.approval_message(count=2)
    clock.advance(1)
    await bot.sender.click(message, "tool_approve", user="U2")
    await settled(bot, 3)

    code, out, err = await bot_command("audit", "--summary", "--format", "jsonl", database_url=bot.storage.url)
    assert code == 0, err
    rows = {(row["kind"], row["name"]): row for row in map(json.loads, out.splitlines())}
    tool = rows["tool", "delete-record"]
    assert (tool["waiting"], tool["decided"], tool["approved"], tool["quick"], tool["p50"], tool["p95"]) == (
        1, 1, 1, 2, 8.0, 8.0,
    )  # fmt: skip
    u2, u3 = rows["person", "U2"], rows["person", "U3"]
    assert (u2["decided"], u2["approved"], u2["quick"], u2["p50"], u2["p95"]) == (2, 2, 2, 1.0, 3.0)
    assert (u3["decided"], u3["approved"], u3["quick"], u3["p50"], u3["p95"]) == (1, 1, 0, 8.0, 8.0)


async def test_cancels_undos_and_interruptions_are_counted(database_url):
    """The audit actions of cancel and undo (`cancelled`, `undone`) are counted as they are written; a call
    interrupted after its approval waits again, timed from the interruption."""
    clock = StoppedClock()
    storage = Storage(database_url, clock=clock)
    try:

        async def line(call_id: str, action: str, actor: str, tool: str = "issue-refund", after: float = 0) -> None:
            clock.advance(after)
            await storage.audit_log.record(
                run_id="run_" + call_id, tool_call_id=call_id, tool_name=tool, action=action, actor=actor,
                via="button",
            )  # fmt: skip

        await line("c1", "requested", "U1")
        await line("c1", "approved", "U2", after=20)
        await line("c1", "executed", "system")
        await line("c1", "undone", "U2", after=60)
        await line("c2", "requested", "U1")
        await line("c2", "cancelled", "U1", after=7)
        await line("c3", "requested", "U1")
        await line("c3", "approved", "U3", after=2)
        await line("c3", "interrupted", "system", after=1)
        await line("c3", "declined", "U3", after=40)
        await line("c4", "requested", "U1", tool="delete-record")
        await line("c4", "cancelled", "system", tool="delete-record", after=9)
    finally:
        await storage.close()

    code, out, err = await bot_command("audit", "--summary", "--format", "jsonl", database_url=database_url)
    assert code == 0, err
    rows = {(row["kind"], row["name"]): row for row in map(json.loads, out.splitlines())}
    refund = rows["tool", "issue-refund"]
    # c1 approved after 20 s, c2 cancelled after 7 s, c3 approved after 2 s, then declined 40 s after it waited again
    assert {k: refund[k] for k in ("decided", "approved", "declined", "cancelled", "undone", "quick")} == {
        "decided": 4, "approved": 2, "declined": 1, "cancelled": 1, "undone": 1, "quick": 1,
    }  # fmt: skip
    assert (refund["p50"], refund["p95"]) == (7.0, 40.0)
    deletes = rows["tool", "delete-record"]  # cancelled by the system, not by a person: counted, not timed
    assert (deletes["cancelled"], deletes["decided"], deletes["p50"]) == (1, 0, None)
    assert (rows["person", "U2"]["approved"], rows["person", "U2"]["undone"]) == (1, 1)
    assert (rows["person", "U1"]["cancelled"], rows["person", "U1"]["decided"], rows["person", "U1"]["p50"]) == (
        1, 1, 7.0,
    )  # fmt: skip
    assert (rows["person", "U3"]["decided"], rows["person", "U3"]["p50"], rows["person", "U3"]["p95"]) == (
        2, 2.0, 40.0,
    )  # fmt: skip
    assert ("person", "system") not in rows
