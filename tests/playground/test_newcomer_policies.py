"""What a newcomer tripped over in the playground about policies (issue 22): with no approvers named,
Bob's Home lists the request he may approve; a disabled tool's refusal reads as a sentence for people
(not the model's instruction), and the Home does not say "(always asks)" beside "Mode: Disabled"."""

from __future__ import annotations

from memory import PolicyChange

from .browser import ALICE, BOB, action_ids, from_bot, home_button, home_text, thread


async def test_with_no_approvers_named_bob_s_home_lists_the_request_he_may_approve(page, playground):
    await page.post("/play/home/open", {"user": BOB})
    await page.wait_for(lambda s: s.get("home"), user=BOB, what="Bob's Home")
    ts = await page.say("@bot delete record 2")  # Alice asks in #general; the defaults: anyone may decide
    await page.wait_for(lambda s: [m for m in thread(s, ts) if action_ids(m)], what="the approval")
    state = await page.wait_for(
        lambda s: s if home_button(s, "tool_approve") else None, user=BOB, what="the approval in Bob's Home"
    )
    assert "delete-record" in home_text(state) and "Nothing is waiting for your decision" not in home_text(state)


async def test_a_disabled_tool_s_refusal_is_said_for_people(page, playground):
    await playground.storage.policies.set("issue-refund", PolicyChange(mode="disabled"))
    ts = await page.say("@bot refund order A-1 $30")
    replies = await page.wait_for(
        lambda s: [m for m in from_bot(thread(s, ts)) if not m["streaming"] and m["text"]], what="the bot's answer"
    )
    text = replies[-1]["text"]
    assert "disabled" in text, text
    assert "do not call" not in text and "tell the user" not in text, text

    await page.post("/play/home/open", {"user": ALICE})
    state = await page.wait_for(lambda s: s if "Tool policies" in home_text(s) else None, what="Alice's Home")
    line = next(part for part in home_text(state).split("`issue-refund`")[1:2])
    assert "always asks" not in line.split("Mode:")[0] and "never runs" in line.split("Mode:")[0], line
