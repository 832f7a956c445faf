"""Posting the message of a call the turn just parked (issue 42): nothing between the suspension and the post
is read again (the runtime's chunk carries the call's view, and a claim this very turn took a moment ago needs
no check), while a claim that aged (the process stalled) is still checked before the post: no post after a
takeover."""

from __future__ import annotations

import pytest

from bot.slack.services import services_of_app
from tests.support.scripted_model import call, tool_calls
from tests.support.statements import statements_of
from tests.support.waiting import until

from .harness import RunningBot, ask_to_delete

pytestmark = pytest.mark.both_databases


def _what(statement: str) -> str:
    """A statement as its verb and first table: `INSERT slack_tool_call_messages`, `SELECT tool_calls`."""
    words = statement.replace("(", " ").replace(",", " ").split()
    verb = words[0]
    if verb == "UPDATE":
        return f"UPDATE {words[1]}"
    before = {"INSERT": "INTO", "SELECT": "FROM", "DELETE": "FROM"}.get(verb)
    if before is None or before not in words:
        return statement[:80]  # a statement of another shape (a CTE): shown as it begins
    return f"{verb} {words[words.index(before) + 1].split('.')[0]}"


def _posting(statements: list[str]) -> tuple[str, list[str]]:
    """The runtime's last statement before the message was recorded (the suspension's), and the statements of the
    turn from then until it ends (the event marked done), the App Home's own refresh left out."""
    start = next(i for i, s in enumerate(statements) if s.startswith("INSERT INTO slack_tool_call_messages"))
    suspended = max(i for i in range(start) if "slack_" not in statements[i])
    end = next(i for i, s in enumerate(statements) if "UPDATE slack_events SET done_at" in s)
    return statements[suspended], [_what(s) for s in statements[suspended + 1 : end] if "slack_home_views" not in s]


@pytest.mark.parametrize("kind", ["approval", "question"])
async def test_a_parked_call_is_posted_without_reading_it_or_its_claim_again(bot: RunningBot, model, kind):
    if kind == "approval":
        ask_to_delete(model)
    else:
        model.chat.push(tool_calls(call("get-weather", {}, id="call_1")))
    with statements_of(bot.storage, begins=False) as seen:
        await bot.mention("delete record 3" if kind == "approval" else "what is the weather?")
        await until(lambda: any("UPDATE slack_events SET done_at" in s for s in seen), what="the turn's end")
    posted = bot.slack.calls_of("chat.postMessage")
    assert len(posted) == 1 and ("tool_approve" if kind == "approval" else "tool_answer") in str(posted[0].params)

    suspension, posting = _posting(seen)
    assert not suspension.startswith("SELECT"), suspension  # the suspension's write, then the message's
    assert posting == [
        "INSERT slack_tool_call_messages",  # recorded, with this turn's claim on posting it
        "UPDATE slack_tool_call_messages",  # its ts, once Slack took it
        "SELECT tool_calls",  # still waiting? (a call decided meanwhile gets no live buttons)
    ], posting


async def test_a_claim_that_aged_before_the_post_is_checked_and_a_takeover_posts_nothing(
    bot: RunningBot, model, clock, monkeypatch
):
    # The turn records the approval's message with its claim, then stalls before posting it, past `repost_after`:
    # meanwhile another replica's recovery takes the post over. When the turn wakes, it must not post.
    services = services_of_app(bot.app)
    in_words = services.languages.of_thread
    taken_over = []

    async def stalls_after_the_record(*args, **kwargs):
        unposted = await services.stores.messages.unposted()
        if unposted and not taken_over:
            clock.advance(services.repost_after + 1)
            [row] = unposted
            assert await services.stores.messages.claim_post(row)  # as another replica's recovery does
            taken_over.append(row.id)
        return await in_words(*args, **kwargs)

    monkeypatch.setattr(services.languages, "of_thread", stalls_after_the_record)
    ask_to_delete(model)
    with statements_of(bot.storage, begins=False) as seen:
        await bot.mention("delete record 3")
        await until(lambda: any("UPDATE slack_events SET done_at" in s for s in seen), what="the turn's end")
    await bot.slack.settle()
    assert taken_over
    assert [c for c in bot.slack.calls_of("chat.postMessage") if "tool_approve" in str(c.params)] == []
    checks = [s for s in seen if s.startswith("SELECT slack_tool_call_messages.id") and "post_claimed_at" in s]
    assert checks, "the aged claim was not checked before the post"
    [row] = await services.stores.messages.unposted()  # the other replica's to post now
    assert row.id == taken_over[0]
