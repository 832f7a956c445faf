"""The playground's people read their own languages (Alice English, Bob Traditional Chinese, Carol Korean),
and each can switch theirs as in Slack's preferences: what they see alone follows at once, a conversation
keeps the language it started in."""

from __future__ import annotations

from .browser import ALICE, BOB, GENERAL, action_ids, shown_text, thread

CAROL = "UCAROL"


async def question_for(page, user: str) -> dict:
    ts = await page.say("@bot what's the weather?", user=user)
    found = await page.wait_for(
        lambda s: [m for m in thread(s, ts) if action_ids(m) == ["tool_answer", "tool_question_cancel"]],
        user=user,
        what="the question",
    )
    return found[0]


async def test_each_person_reads_the_bot_in_their_language(page):
    people = {p["id"]: p["locale"] for p in (await page.state(ALICE))["people"]}
    assert (people[ALICE], people[BOB], people[CAROL]) == ("en-US", "zh-TW", "ko-KR")
    alice = shown_text(await question_for(page, ALICE))
    assert "asks:" in alice and "Which city?" in alice  # the tool's own words as written, in every language
    assert "詢問：" in shown_text(await question_for(page, BOB))
    assert "의 질문:" in shown_text(await question_for(page, CAROL))


async def test_a_switched_language_shows_in_new_conversations(page):
    status, _ = await page.post("/play/locale", {"user": ALICE, "locale": "ja-JP"})
    assert status == 200
    assert "からの質問:" in shown_text(await question_for(page, ALICE))
    status, body = await page.post("/play/locale", {"user": ALICE, "locale": "xx-YY"})
    assert status == 400 and "pick a language" in body
    assert [c for c in (await page.state(ALICE))["channels"] if c["id"] == GENERAL]
