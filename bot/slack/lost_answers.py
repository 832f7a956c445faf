"""An answer stored but never shown: shown once.

A run stores its final answer (the run completed) before the answer goes to Slack, so a replica stopped
between the two (SIGKILL, a crash) leaves a completed run whose answer nobody sees. The replica that takes
the thread's turn over (the message's run finished: before, it took the message as answered and said
nothing) reads the thread (`conversations.replies`) and, when no message shows the run's answer (its
feedback buttons, or its text), posts the stored answer (`show_lost_answer`). Not yet covered: a run that
goes on after a decision has no turn, and its click is marked done with the decision's message, so an
answer stored after a decision and lost with its replica is not shown by anyone.

The other way round, a process that stalled (SIGSTOP, a paused VM) for about a lease may find, when it
wakes, that another replica has posted the answer already: before it posts an answer after such a gap
(`stall_watch.StallWatch`), it reads the thread too (`answer_shown`), and says nothing when the answer is there. Both
read the thread right before posting, so only two posts within the same moment could both land.
"""

from __future__ import annotations

import logging
from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from .feedback_builder import build_feedback_block
from .posting import UNCLEAR
from .replies import ThreadReply
from .services import SlackServices
from .threads import SlackThread

_log = logging.getLogger("bot.slack")

_SHOWN_PREFIX = 40
"""Characters of an answer (spaces aside) that a message's text must hold to count as showing it."""


def _squeezed(text: str) -> str:
    return "".join(text.split())


def shows(message: dict[str, Any], run_id: str, answer: str) -> bool:
    """Whether a message of the thread (as `conversations.replies` gives it) shows `run_id`'s `answer`: it
    carries the run's feedback buttons, or its text starts the same (a stream stopped before its end)."""
    if any(
        isinstance(b, dict) and b.get("block_id") == f"feedback_{run_id}"[:255] for b in message.get("blocks") or []
    ):
        return True
    wanted = _squeezed(answer)[:_SHOWN_PREFIX]
    return bool(wanted) and wanted in _squeezed(str(message.get("text") or ""))


async def answer_shown(client: AsyncWebClient, thread: SlackThread, run_id: str, answer: str) -> bool | None:
    """Whether a message of `thread` shows `run_id`'s `answer`; None when the thread could not be read."""
    cursor = None
    try:
        while True:
            page = await client.conversations_replies(
                channel=thread.channel, ts=thread.thread_ts, cursor=cursor, limit=200
            )
            if any(shows(m, run_id, answer) for m in page.get("messages") or [] if isinstance(m, dict)):
                return True
            cursor = (page.get("response_metadata") or {}).get("next_cursor")
            if not cursor:
                return False
    except (SlackApiError, *UNCLEAR) as exc:
        _log.warning("could not read the thread %s to look for run %s's answer: %r", thread.thread_id, run_id, exc)
        return None


async def show_lost_answer(
    services: SlackServices, client: AsyncWebClient, thread: SlackThread, run_id: str, *, requester: str
) -> None:
    """Post run `run_id`'s stored answer in `thread` unless a message there shows it already (or the thread
    cannot be read: a second answer would be worse than a late look)."""
    answer = await services.agent.stored_answer(run_id)
    if not answer.strip() or await answer_shown(client, thread, run_id, answer) is not False:
        return
    services.logger.warning("run %s: its answer was stored but not shown (its replica stopped); shown now", run_id)
    tr = await services.languages.of_thread(thread.thread_id, requester)
    reply = ThreadReply(
        client, thread, recipient=requester, streaming=services.streaming, logger=services.logger, tr=tr
    )
    await reply.append(answer)
    await reply.close(feedback=build_feedback_block(run_id, tr))
