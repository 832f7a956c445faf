"""Two `python -m bot serve` processes on one database: messages sent to either in quick succession in
one thread are answered one at a time, in the order they were sent."""

from __future__ import annotations

from tests.support.processes import SECRET, bot_env, free_port, start_bot, stop_bot
from tests.support.scripted_model import failure, reply
from tests.support.slack import SignedSender


def last_user_text(request: dict) -> str:
    return [m for m in request["messages"] if m["role"] == "user"][-1]["content"]


async def test_two_replicas_answer_one_thread_in_order(database_url, slack, model, tmp_path):
    env = bot_env(database_url, slack)
    # the first answer hangs for a while: what is sent meanwhile must wait for it, whichever replica gets it
    model.chat.push(
        failure("timeout", seconds=2.0, then=reply("Answer one.")),
        reply("Answer two."),
        reply("Answer three."),
        reply("Answer four."),
    )
    ports = free_port(), free_port()
    one = await start_bot(ports[0], env, tmp_path / "one.log")
    two = await start_bot(ports[1], env, tmp_path / "two.log")
    to_one = SignedSender(f"http://127.0.0.1:{ports[0]}/slack/events", SECRET)
    to_two = SignedSender(f"http://127.0.0.1:{ports[1]}/slack/events", SECRET)
    try:
        first = to_one.mention("first", ts="1800000100.000100")
        assert (await to_one.event(first))[0] == 200
        for sender, text, ts in (
            (to_two, "second", "1800000101.000100"),
            (to_one, "third", "1800000102.000100"),
            (to_two, "fourth", "1800000103.000100"),
        ):
            assert (await sender.event(sender.message(text, ts=ts, thread_ts=first["ts"])))[0] == 200
        stops = await slack.wait_for("chat.stopStream", count=4, timeout=60)
    finally:
        await stop_bot(one)
        await stop_bot(two)

    answers = sorted((slack.message("C1", s.params["ts"]) for s in stops), key=lambda m: float(m.ts))
    assert [m.text for m in answers] == ["Answer one.", "Answer two.", "Answer three.", "Answer four."]
    assert all(m.thread_ts == first["ts"] for m in answers)
    requests = model.chat.requests
    assert [last_user_text(r) for r in requests] == ["first", "second", "third", "fourth"]
    for earlier, request in zip(["Answer one.", "Answer two.", "Answer three."], requests[1:], strict=True):
        assert earlier in [m.get("content") for m in request["messages"]]  # the turn before it was over
