"""Modals opened by the bot's buttons, filled in and submitted as the page does."""

from __future__ import annotations

from .browser import ALICE, BOB, action_ids, from_bot, shown_text, thread


async def approval_in(page, ts):
    return (await page.wait_for(lambda s: [m for m in thread(s, ts) if action_ids(m)], what="the approval"))[0]


async def modal_of(page, user):
    return await page.wait_for(lambda s: s["modal"], user=user, what=f"a modal for {user}")


def input_block(modal, kind):
    return next(b for b in modal["view"]["blocks"] if b["type"] == "input" and b["element"]["type"] == kind)


async def test_decline_with_a_reason_needs_the_reason_and_shows_it(page):
    ts = await page.say("@bot refund $25 for order A-1001")
    approval = await approval_in(page, ts)
    assert '"amount": 25' in shown_text(approval) and '"order_id": "A-1001"' in shown_text(approval)

    await page.click(approval, "tool_decline_with_reason", user=BOB)
    modal = await modal_of(page, BOB)
    assert (await page.state(ALICE))["modal"] is None  # the modal opens for the one who clicked
    reason = input_block(modal, "plain_text_input")

    refused = await page.submit(modal, {}, user=BOB)
    assert refused["ok"] is False and reason["block_id"] in refused["errors"]  # required, as in Slack

    await page.submit(modal, {reason["block_id"]: "not today"}, user=BOB)

    declined = await page.wait_for(
        lambda s: [m for m in thread(s, ts) if "Reason: not today" in shown_text(m)], what="the declined message"
    )
    assert action_ids(declined[0]) == [] and "Declined by <@UBOB>" in shown_text(declined[0])
    assert (await page.state(BOB))["modal"] is None
    said = await page.wait_for(
        lambda s: [m for m in from_bot(thread(s, ts)) if "did not run" in m["text"]], what="the bot's answer"
    )
    assert "not today" in said[0]["text"]


async def test_edit_arguments_approves_the_edited_call(page, playground):
    from .browser import record_ids

    ts = await page.say("@bot delete record 4")
    await page.click(await approval_in(page, ts), "tool_edit_args")
    modal = await modal_of(page, ALICE)
    record_id = input_block(modal, "number_input")
    assert record_id["element"].get("initial_value") == "4"

    not_a_number = await page.submit(modal, {record_id["block_id"]: "five"})
    assert not_a_number["ok"] is False and record_id["block_id"] in not_a_number["errors"]
    await page.submit(modal, {record_id["block_id"]: "5"})

    await page.wait_for(
        lambda s: [m for m in thread(s, ts) if "Approved with edited arguments" in shown_text(m)], what="the decision"
    )
    await page.wait_for(lambda s: [m for m in thread(s, ts) if "record 5 is deleted" in m["text"]], what="done")
    assert 4 in await record_ids(playground) and 5 not in await record_ids(playground)


async def test_the_answer_form_resumes_the_question(page):
    ts = await page.say("@bot weather please")
    question = await page.wait_for(lambda s: [m for m in thread(s, ts) if action_ids(m)], what="the question")
    await page.click(question[0], "tool_answer")
    modal = await modal_of(page, ALICE)
    city = input_block(modal, "plain_text_input")

    await page.submit(modal, {city["block_id"]: "Oslo"})

    await page.wait_for(
        lambda s: [m for m in from_bot(thread(s, ts)) if "Oslo" in m["text"] and "°C" in m["text"]], what="weather"
    )
    answered = next(m for m in thread(await page.state(), ts) if m["ts"] == question[0]["ts"])
    assert "Answered by <@UALICE>" in shown_text(answered)


async def test_closing_a_modal_closes_it(page):
    ts = await page.say("@bot delete record 1")
    await page.click(await approval_in(page, ts), "tool_decline_with_reason")
    modal = await modal_of(page, ALICE)

    status, _ = await page.post(f"/play/views/{modal['id']}/close", {"user": ALICE})

    assert status == 200 and (await page.state(ALICE))["modal"] is None
    approval = next(m for m in thread(await page.state(), ts) if m["blocks"])
    assert "tool_approve" in action_ids(approval)  # still waiting
