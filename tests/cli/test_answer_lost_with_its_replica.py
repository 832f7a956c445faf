"""An answer stored and then lost with its replica is shown once (issue 41), in real processes: `python -m bot
serve` runs `list-records` (no approval), stores the model's final answer (the run completed), and is
killed (SIGKILL) while its post of that answer waits for Slack. The replica that takes the thread's turn
over finds the message's run completed, reads the thread, finds no answer there, and posts the stored one.

Before, it took the completed run as answered and said nothing: the thread never got its answer (the long
soak, seed 44003)."""

from __future__ import annotations

from tests.support.processes import SECRET, bot_env, free_port, lines, start_serve, stop_bot
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import BOT_USER_ID, SignedSender, hang, hanging
from tests.support.waiting import until

QUICK_RECOVERY = {"BOT_RECOVERY_INTERVAL": "0.5", "BOT_STALE_AFTER": "2"}
ANSWER = "There are 4 records — 4 件あります。"


async def test_an_answer_stored_by_a_replica_killed_before_posting_it_is_posted_by_the_other(
    database_url, slack, model, tmp_path
):
    effects = tmp_path / "effects.log"
    model.chat.push(tool_calls(call("list-records", {"id": "4"}, id="call_1")), reply(ANSWER))
    env, ports = bot_env(database_url, slack, EFFECTS=str(effects), **QUICK_RECOVERY), (free_port(), free_port())
    sender = SignedSender(f"http://127.0.0.1:{ports[0]}/slack/events", SECRET, slack=slack)
    killed = await start_serve(ports[0], env, tmp_path / "a.log")
    try:
        event = sender.mention("list records 4")
        held = hang(slack, "chat.startStream", seconds=20)  # the answer's post: its run completed by now
        assert (await sender.event(event))[0] == 200
        await hanging(held)
    finally:
        killed.kill()
        await killed.wait()
    assert [m for m in slack.thread("C1", event["ts"]) if m.user == BOT_USER_ID] == []

    other = await start_serve(ports[1], env, tmp_path / "b.log")
    try:
        await until(lambda: ANSWER in [m.text for m in slack.thread("C1", event["ts"])], 30, what="the answer")
        await slack.settle()
        said = [m.text for m in slack.thread("C1", event["ts"]) if m.user == BOT_USER_ID]
        assert said == [ANSWER]  # once, and no "send it again"
        assert len(model.chat.requests) == 2  # the model was not asked again
        assert len(lines(effects, "started list-records 4")) == 1
    finally:
        await stop_bot(other)
