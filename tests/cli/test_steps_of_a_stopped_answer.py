"""A replica killed between a tool's end and the model's next words leaves no message without words (issue
41), in real processes: `python -m bot serve` runs `list-records` (no approval) and is killed (SIGKILL)
while the model writes its answer; another replica's recovery asks the model again and answers.

Before, the call's end opened the answer with its task card alone (`chat.startStream` with one
`task_update` chunk), so the killed replica left a message of a card and no words above the answer that
came from the other replica (the long soak, seed 43002). Now a step that comes while no message of the
answer is open waits for its first words."""

from __future__ import annotations

import threading

from tests.support.processes import SECRET, bot_env, free_port, lines, start_serve, stop_bot
from tests.support.scripted_model import call, reply, tool_calls
from tests.support.slack import BOT_USER_ID, SignedSender
from tests.support.waiting import until

QUICK_RECOVERY = {"BOT_RECOVERY_INTERVAL": "0.5", "BOT_STALE_AFTER": "2"}


async def test_a_replica_killed_while_the_model_answers_after_a_tool_leaves_no_wordless_message(
    database_url, slack, model, tmp_path
):
    effects = tmp_path / "effects.log"
    writing = threading.Event()  # the first replica's request for the answer is being served
    release = threading.Event()

    def slowly(body):
        writing.set()
        release.wait(60)  # its replica is killed meanwhile: no one reads this answer
        return reply("There are 4 records.")

    model.chat.push(tool_calls(call("list-records", {"id": "4"}, id="call_1")), slowly, reply("There are 4 records."))
    env, ports = bot_env(database_url, slack, EFFECTS=str(effects), **QUICK_RECOVERY), (free_port(), free_port())
    sender = SignedSender(f"http://127.0.0.1:{ports[0]}/slack/events", SECRET, slack=slack)
    killed = await start_serve(ports[0], env, tmp_path / "a.log")
    try:
        event = sender.mention("list records 4")
        assert (await sender.event(event))[0] == 200
        await until(writing.is_set, 30, what="the model asked for the answer after the tool")
        assert lines(effects, "finished list-records 4")
    finally:
        killed.kill()
        await killed.wait()
    await slack.settle()
    assert slack.calls_of("chat.startStream") == []  # nothing of the answer shown yet

    other = await start_serve(ports[1], env, tmp_path / "b.log")
    try:
        await until(lambda: "There are 4 records." in [m.text for m in slack.thread("C1", event["ts"])], 30)
        await slack.settle()
        said = [m.all_text for m in slack.thread("C1", event["ts"]) if m.user == BOT_USER_ID]
        assert all(text.strip() for text in said), said  # (a note that it was stopped may come first)
        assert [text.splitlines()[0] for text in said].count("There are 4 records.") == 1, said
        assert len(lines(effects, "started list-records 4")) == 1
    finally:
        release.set()
        await stop_bot(other)
