"""Bulk decisions in the App Home, through signed block_actions and the real Bolt app, on SQLite and
PostgreSQL: each ticked approval is decided as if clicked alone (its own policy check and fingerprint),
counted once and audited; the Home says what happened to each, and every thread message updates."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bot.slack_emulator.app_requests import home_block_actions
from memory import PolicyChange
from tests.slack.harness import (
    RunningBot,
    bulk_options,
    home_bulk_click,
    open_home,
    published,
    record_ids,
    running_bot,
    text_of,
)
from tests.support.scripted_model import call, reply, tool_calls

APPROVE_SELECTED, DECLINE_SELECTED = "home_bulk_approve", "home_bulk_decline"


@pytest.fixture
async def bot(database_url, slack, model, clock):
    async with running_bot(database_url=database_url, slack=slack, admins=("U1",), clock=clock) as running:
        for tool in ("delete-record", "issue-refund"):
            await running.storage.policies.set(tool, PolicyChange(approvers=["U2"]))
        yield running


async def ask(bot: RunningBot, model, text: str, name: str, args: dict[str, Any], *, count: int):
    """Mention the bot in a new thread; its model asks for `name(args)`; returns the approval message.
    (The model's answers after the decisions are pushed once every call waits: `answers`.)"""
    model.chat.push(tool_calls(call(name, args, id=f"call_{count}")))
    await bot.mention(text, ts=f"1700000{count}.000100")
    return await bot.approval_message(count=count)


def answers(model, count: int) -> None:
    """What the model says after each decided call, in whatever order the decisions land."""
    model.chat.push(*(reply("Done.") for _ in range(count)))


async def home_saying(bot: RunningBot, user: str, text: str) -> dict[str, Any]:
    """The first Home published for `user` that says `text` (waits for it)."""
    await bot.slack.wait_for("views.publish", lambda c: c.params.get("user_id") == user and text in str(c.params))
    return next(view for view in published(bot, user) if text in json.dumps(view, ensure_ascii=False))


async def three_waiting(bot: RunningBot, model):
    await open_home(bot, "U2")
    first = await ask(bot, model, "delete record 3", "delete-record", {"id": 3}, count=1)
    second = await ask(bot, model, "delete record 4", "delete-record", {"id": 4}, count=2)
    refund = await ask(
        bot, model, "退款 ORD-7", "issue-refund", {"order_id": "ORD-7", "amount": 12.5, "reason": "café 파손"},
        count=3,
    )  # fmt: skip
    answers(model, 3)
    view = await home_saying(bot, "U2", "ORD-7")
    assert len(bulk_options(view)) == 3
    assert ["Approve selected", "Decline selected", "Decline selected with reason"] == [
        e["text"]["text"] for b in view["blocks"] if b.get("block_id") == "home_bulk" for e in b["elements"]
    ]
    # each card apart from the next, and the bulk buttons apart from the last card's own, under their heading
    kinds = ["card" if str(b.get("block_id", "")).startswith("home_pick_") else b["type"] for b in view["blocks"]]
    cards = [i for i, kind in enumerate(kinds) if kind == "card"]
    assert [kinds[i + 1 : i + 3] for i in cards[:-1]] == [["actions", "divider"]] * 2
    bulk = next(i for i, b in enumerate(view["blocks"]) if b.get("block_id") == "home_bulk")
    assert kinds[bulk - 2 : bulk] == ["divider", "section"] and cards[-1] + 2 == bulk - 2
    assert view["blocks"][bulk - 1]["text"]["text"] == "*The requests you ticked*"
    return first, second, refund, view


CALL_OF = {"first": "call_1", "second": "call_2", "refund": "call_3"}


def audit_of(entries, which: str) -> list[tuple[str, str, str]]:
    return [(e.action, e.actor, e.via) for e in entries if e.tool_call_id == CALL_OF[which]]


async def test_bulk_approve_decides_each_as_if_clicked_alone(bot: RunningBot, model):
    first, second, refund, view = await three_waiting(bot, model)
    # meanwhile: the second is approved in its thread, and the refund's policy now names someone else
    await bot.sender.click(second, "tool_approve", user="U2")
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == second.ts)
    await bot.slack.wait_for("chat.stopStream")
    await bot.storage.policies.set("issue-refund", PolicyChange(approvers=["U3"]))
    updates_before = len(bot.slack.calls_of("chat.update"))

    await home_bulk_click(bot, "U2", APPROVE_SELECTED, view=view, chosen=bulk_options(view))  # the Home as seen

    result = await home_saying(bot, "U2", "Approved 1")
    top = result["blocks"][1]
    assert top["block_id"] == "home_bulk_result"
    lines = top["text"]["text"].splitlines()
    assert lines[0].startswith('*Approved 1:* `delete-record` {"id": 3} from <@U1>')
    assert lines[1].startswith('*Already decided 1:* `delete-record` {"id": 4}') and "already decided" in lines[1]
    assert lines[2].startswith("*Not allowed 1:* `issue-refund`") and "ORD-7" in lines[2] and "<@U3>" in lines[2]
    assert "café 파손" in lines[2]
    await bot.slack.wait_for("chat.stopStream", count=2)
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == first.ts)
    assert "Approved" in first.all_text and "<@U2>" in first.all_text and first.action_ids() in ([], ["tool_undo"])
    assert refund.action_ids()[0] == "tool_approve"  # the refused one still waits, its message unchanged
    assert all(c.params.get("ts") != refund.ts for c in bot.slack.calls_of("chat.update")[updates_before:])
    assert await record_ids(bot) == [1, 2, 5]  # 3 and 4 deleted, each once

    entries = await bot.storage.audit_log.entries()
    assert audit_of(entries, "first") == [("requested", "U1", "runtime"), ("approved", "U2", "home"),
                                        ("executed", "system", "runtime")]  # fmt: skip
    assert audit_of(entries, "second") == [("requested", "U1", "runtime"), ("approved", "U2", "button"),
                                         ("executed", "system", "runtime")]  # fmt: skip
    assert audit_of(entries, "refund") == [("requested", "U1", "runtime"), ("refused", "U2", "home")]


async def test_bulk_decline(bot: RunningBot, model):
    first, second, refund, view = await three_waiting(bot, model)
    chosen = bulk_options(view)[:2]
    await home_bulk_click(bot, "U2", DECLINE_SELECTED, view=view, chosen=chosen)
    result = await home_saying(bot, "U2", "Declined 2")
    assert "Approved" not in result["blocks"][1]["text"]["text"]
    for message in (first, second):
        await bot.slack.wait_for("chat.update", lambda c, m=message: c.params.get("ts") == m.ts)
        assert "Declined" in message.all_text and message.action_ids() == []
    assert refund.action_ids()[0] == "tool_approve"
    await bot.slack.wait_for("chat.stopStream", count=2)
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
    entries = await bot.storage.audit_log.entries()
    assert [audit_of(entries, m)[1:] for m in ("first", "second", "refund")] == [
        [("declined", "U2", "home")],
        [("declined", "U2", "home")],
        [],
    ]
    # the Home keeps the result and lists only the refund as waiting
    await bot.slack.wait_until(
        lambda: [v for v in published(bot, "U2") if "Declined 2" in text_of(v) and len(bulk_options(v)) == 1]
    )


async def test_a_forged_or_stale_selection_decides_nothing_for_that_item(bot: RunningBot, model):
    first, second, refund, view = await three_waiting(bot, model)
    one, two, three = bulk_options(view)
    ref_one, fingerprint_one = one.rsplit(":", 1)
    ref_two, _ = two.rsplit(":", 1)
    forged = {
        "home_pick_a": {"home_bulk_pick": {"type": "checkboxes", "selected_options": [
            {"value": f"{ref_one}:{'0' * 64}"},  # a wrong fingerprint
            {"value": f"{ref_two}:{fingerprint_one}"},  # another call's fingerprint
            {"value": f"no-such-message:{fingerprint_one}"},  # a call this bot does not show (another agent's)
            {"value": three},  # the refund, as shown: decided
        ]}},
    }  # fmt: skip
    await home_bulk_click(bot, "U2", APPROVE_SELECTED, view=view, chosen=[], forged=forged)
    result = await home_saying(bot, "U2", "Not decided 3")
    text = result["blocks"][1]["text"]["text"]
    assert text.startswith("*Approved 1:* `issue-refund`") and "stale or forged" in text
    await bot.slack.wait_for("chat.stopStream")
    await bot.slack.settle()
    assert first.action_ids()[0] == "tool_approve" and second.action_ids()[0] == "tool_approve"
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
    entries = await bot.storage.audit_log.entries()
    assert audit_of(entries, "first") == [("requested", "U1", "runtime")]
    assert audit_of(entries, "second") == [("requested", "U1", "runtime")]
    assert audit_of(entries, "refund")[1] == ("approved", "U2", "home")


async def test_nothing_selected_says_so(bot: RunningBot, model):
    *_, view = await three_waiting(bot, model)
    await home_bulk_click(bot, "U2", APPROVE_SELECTED, view=view, chosen=[])
    result = await home_saying(bot, "U2", "Nothing was selected")
    assert "Nothing was selected" in text_of(result)
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


async def test_the_home_shows_a_quorum_calls_count(database_url, slack, model, clock):
    async with running_bot(database_url=database_url, slack=slack, clock=clock) as bot:
        await bot.storage.policies.set("delete-record", PolicyChange(approvers=["U2", "U3"], approvals_required=2))
        await open_home(bot, "U3")
        message = await ask(bot, model, "delete record 3", "delete-record", {"id": 3}, count=1)
        answers(model, 1)
        view = await home_saying(bot, "U3", "0 of 2 approvals")
        await bot.sender.click(message, "tool_approve", user="U2")
        view = await home_saying(bot, "U3", "1 of 2 approvals: <@U2>")
        assert ":busts_in_silhouette: 1 of 2 approvals: <@U2>" in text_of(view)
        await home_bulk_click(bot, "U3", APPROVE_SELECTED, view=view, chosen=bulk_options(view))
        await home_saying(bot, "U3", "Approved 1")
        await bot.slack.wait_for("chat.stopStream")
        assert await record_ids(bot) == [1, 2, 4, 5]


async def test_bulk_decline_with_one_reason(bot: RunningBot, model):
    first, second, refund, view = await three_waiting(bot, model)
    chosen = bulk_options(view)[1:]
    await home_bulk_click(bot, "U2", "home_bulk_decline_with_reason", view=view, chosen=chosen)
    opened = await bot.slack.wait_for("views.open")
    modal = opened[-1].params["view"]
    modal = json.loads(modal) if isinstance(modal, str) else modal
    assert modal["callback_id"] == "home_bulk_decline_reason" and "2 requests" in text_of(modal)
    assert first.action_ids()[0] == "tool_approve"  # opening the modal decides nothing

    reason = "Pas maintenant — 今は駄目, بعداً"
    values = {"reason": {"value": {"type": "plain_text_input", "value": reason}}}
    status, _ = await bot.sender.submit(modal, values, user="U2")
    assert status == 200
    await home_saying(bot, "U2", "Declined 2")
    for message in (second, refund):
        await bot.slack.wait_for("chat.update", lambda c, m=message: c.params.get("ts") == m.ts)
        assert "Declined" in message.all_text and message.action_ids() == []
    assert first.action_ids()[0] == "tool_approve"
    entries = await bot.storage.audit_log.entries()
    declined = [(e.tool_call_id, e.via, e.detail) for e in entries if e.action == "declined"]
    assert sorted(declined) == [("call_2", "home", reason), ("call_3", "home", reason)]
    await bot.slack.wait_for("chat.stopStream", count=2)
    assert await record_ids(bot) == [1, 2, 3, 4, 5]


async def test_ticking_a_box_is_acknowledged_and_decides_nothing(bot: RunningBot, model):
    first, *_, view = await three_waiting(bot, model)
    value = bulk_options(view)[0]
    tick = {"type": "checkboxes", "action_id": "home_bulk_pick", "block_id": "home_pick_x",
            "selected_options": [{"value": value}]}  # fmt: skip
    payload = home_block_actions("U2", view, tick, trigger_id=bot.sender.trigger_for("U2"))
    status, _ = await bot.sender.interaction(payload)
    assert status == 200  # Slack sends a block_actions for each tick; unanswered, Slack shows an error
    await bot.slack.settle()
    assert first.action_ids()[0] == "tool_approve" and bot.slack.calls_of("chat.update") == []
    assert await record_ids(bot) == [1, 2, 3, 4, 5]
