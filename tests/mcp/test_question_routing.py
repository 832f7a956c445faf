"""Every MCP server question belongs to its own call: several calls to one server open at once, from
different people in different threads, each asked "Which city?" (the example server's `ask_city`). Each
question is posted in its own thread, addressed to its own requester; each answer reaches only its own
call, and each call's result is what its own person answered. A question the server asks outside of any
call is declined to the server, never given to a call that is open."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from bot.assemble import add_tools
from bot.demo import build_demo_agent
from bot.slack_emulator import Message
from tests.slack.harness import MODEL, RunningBot, running_bot
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.waiting import until

from .servers import configs, connected, context, demo_bot_with, http_server, stdio_entry

CITIES = [("U1", "北京"), ("U3", "서울"), ("U2", "東京"), ("U7", "上海"), ("U9", "大阪")]
"""Who asks, and the city they answer (Chinese, Korean, Japanese)."""
SLOW = 30.0
"""Seconds to wait for what a server process does (each session of a stdio server is a process that starts)."""


@pytest.fixture(params=["stdio"])  # a test asks for "http" too
async def mcp_servers(request, tmp_path):
    if request.param == "stdio":
        async with connected(configs(tmp_path, {"tickets": stdio_entry()})) as servers:
            yield servers
        return
    async with http_server() as url, connected(configs(tmp_path, {"tickets": {"url": url}})) as servers:
        yield servers


@pytest.fixture
async def bot(database_url, slack, model, mcp_servers):
    async with demo_bot_with(mcp_servers, database_url=database_url, slack=slack) as running:
        yield running


@dataclass
class Trip:
    user: str
    city: str
    name: str
    thread_ts: str
    approval: Message
    via: RunningBot
    """The bot replica that took the mention, and holds the call."""


def says_what_the_tool_returned(body: dict) -> object:
    """The model's last word in a thread: the tool's result as it read it."""
    return reply(f"结果 · 결과 · 結果: {[m for m in body['messages'] if m.get('role') == 'tool'][-1]['content']}")


async def propose_trips(
    bots: list[RunningBot], model, people: list[tuple[str, str]], *, delays: list[float] | None = None
) -> list[Trip]:
    """Each person mentions the bot in a thread of their own (on the replicas in turn); the model calls
    `ask_city` there."""
    trips = []
    for i, (user, city) in enumerate(people):
        bot = bots[i % len(bots)]
        name = f"trip {i}"
        args = {"trip": name, "delay": (delays or [0] * len(people))[i]}
        model.chat.push(tool_calls(call("tickets__ask_city", args, id=f"call_{i}")))
        event = await bot.mention(f"plan {name}", user=user)
        approval = await bot.approval_message(count=i + 1)
        assert approval.thread_ts == event["ts"]
        trips.append(Trip(user=user, city=city, name=name, thread_ts=event["ts"], approval=approval, via=bot))
    return trips


async def question_in(bot, trip: Trip) -> Message:
    """The question posted in the trip's thread (waits for it)."""
    calls = await bot.slack.wait_for(
        "chat.postMessage",
        lambda c: "tool_answer" in str(c.params.get("blocks")) and c.params.get("thread_ts") == trip.thread_ts,
        timeout=SLOW,
    )
    message = bot.slack.posted_by(calls[0])
    await bot.recorded(message)
    return message


async def answer(bot, trip: Trip, question: Message, forms_before: int) -> None:
    """The trip's person answers its question through the form, with their city."""
    await bot.sender.click(question, "tool_answer", user=trip.user)
    opened = await bot.slack.wait_for("views.open", count=forms_before + 1, timeout=SLOW)
    city = {"type": "plain_text_input", "value": trip.city}
    await bot.sender.submit(opened[forms_before].params["view"], {"field:city": {"value": city}}, user=trip.user)


async def last_word_in(bot, trip: Trip) -> str:
    async def said() -> str | None:
        texts = [m.text for m in bot.slack.thread("C1", trip.thread_ts) if m.text.startswith("结果")]
        return texts[-1] if texts else None

    return await until(said, timeout=SLOW, what=f"the model's answer in the thread of {trip.name}")


def question_posts(bot) -> list[dict]:
    return [c.params for c in bot.slack.calls_of("chat.postMessage") if "tool_answer" in str(c.params.get("blocks"))]


async def assert_each_answer_reached_its_own_call(bots: list[RunningBot], model, trips: list[Trip]) -> None:
    """Each question is its own call's; each person answers theirs (through the next replica, if there is
    another), and each call's result is that person's answer."""
    bot = bots[0]
    questions = [await question_in(bot, trip) for trip in trips]
    for trip, question in zip(trips, questions, strict=True):  # its own question, to its own person
        assert f"Which city? ({trip.name})" in question.all_text
        assert f"<@{trip.user}>" in question.all_text
        others = [t for t in trips if t is not trip]
        assert not any(f"({o.name})" in question.all_text or f"<@{o.user}>" in question.all_text for o in others)
    assert len(question_posts(bot)) == len(trips)  # no question posted twice, none in another thread

    model.chat.push(*[says_what_the_tool_returned] * len(trips))
    for i, (trip, question) in enumerate(reversed(list(zip(trips, questions, strict=True)))):
        await answer(bots[(bots.index(trip.via) + 1) % len(bots)], trip, question, forms_before=i)
    for trip in trips:
        word = await last_word_in(bot, trip)
        assert f"{trip.name}: {trip.city}" in word
        assert not any(other.city in word for other in trips if other is not trip)


async def approve(trip: Trip) -> None:
    await trip.via.sender.click(trip.approval, "tool_approve", user=trip.user)


@pytest.mark.parametrize("mcp_servers", ["stdio", "http"], indirect=True)
async def test_two_calls_on_one_server_each_get_their_own_question_and_answer(bot, model):
    trips = await propose_trips([bot], model, CITIES[:2])
    await approve(trips[0])
    await question_in(bot, trips[0])  # U1's call waits on its question in thread A
    await approve(trips[1])  # while U3's call in thread B runs and asks its own
    await assert_each_answer_reached_its_own_call([bot], model, trips)


async def test_five_calls_on_one_server_at_once_each_answer_reaches_only_its_own_call(bot, model):
    trips = await propose_trips([bot], model, CITIES)
    for trip in trips:
        await approve(trip)
    await assert_each_answer_reached_its_own_call([bot], model, trips)


async def test_a_later_calls_question_is_never_posted_in_an_earlier_calls_thread(bot, model):
    """U1's call is open and has not asked yet when U3's call asks: the question is U3's, in U3's thread."""
    trips = await propose_trips([bot], model, CITIES[:2], delays=[1.5, 0])
    await approve(trips[0])
    await bot.slack.wait_for("chat.update", lambda c: c.params.get("ts") == trips[0].approval.ts)  # it runs
    await approve(trips[1])
    second = await question_in(bot, trips[1])
    assert "Which city? (trip 1)" in second.all_text and "<@U3>" in second.all_text
    await assert_each_answer_reached_its_own_call([bot], model, trips)


async def test_a_question_outside_of_any_call_is_declined_to_the_server_and_reaches_no_call(
    bot, model, mcp_servers, tmp_path
):
    trips = await propose_trips([bot], model, CITIES[:1])
    await approve(trips[0])
    await question_in(bot, trips[0])  # a call is open, waiting on its question

    told = tmp_path / "late-question.txt"
    tools = {t.id: t for t in mcp_servers.tools}
    assert await tools["tickets__ask_later"].execute({"path": str(told)}, context()) == "I will ask later"
    assert await until(
        lambda: told.exists() and told.read_text(encoding="utf-8"), what="the server to be answered"
    ) == ("decline")
    assert len(question_posts(bot)) == 1  # the late question was posted nowhere
    await assert_each_answer_reached_its_own_call([bot], model, trips)  # and the open call was not disturbed


@pytest.fixture
async def replicas(tmp_path, database_url, slack, model, mcp_servers):
    """Two bot replicas on one database, each with MCP servers of its own, as two processes would."""

    def agent_with(servers):
        def agent(storage):
            built = build_demo_agent(storage, model=MODEL)
            add_tools(built, servers.tools)
            return built

        return agent

    async with (
        connected(configs(tmp_path, {"tickets": stdio_entry()})) as others,
        running_bot(database_url=database_url, slack=slack, agent_factory=agent_with(mcp_servers)) as first,
        running_bot(database_url=database_url, slack=slack, agent_factory=agent_with(others)) as second,
    ):
        yield [first, second]


@pytest.mark.parametrize("database_url", ["postgres"], indirect=True)
async def test_on_two_replicas_each_holds_its_own_calls_and_answers_given_on_the_other_reach_them(replicas, model):
    trips = await propose_trips(replicas, model, CITIES[:4])  # two calls held by each replica
    for trip in trips:
        await approve(trip)
    await assert_each_answer_reached_its_own_call(replicas, model, trips)
