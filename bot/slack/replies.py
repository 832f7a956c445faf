"""Write one answer of the agent into a Slack thread as it is generated.

Streams with `chat.startStream`/`appendStream`/`stopStream` (Slack renders the Markdown itself); where
Slack refuses streaming (older workspaces, some channel types) it posts the text converted to mrkdwn
and edits it with `chat.update` as it grows. Either way an answer longer than one message continues
in the next one.

The agent's work shows as thinking steps, one per tool call with its state (`Step`): `task_update`
chunks in the streamed answer (Slack draws each as a task card), and where Slack does not stream, one
compact context line (a message of its own, edited as the steps move on). A step that comes while no
message of the answer is open waits for its first words and goes first in their message: a process stopped
between a call's end and the model's next words, or a run that goes on elsewhere, leaves no message of
cards without words.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import time
from dataclasses import dataclass
from typing import Any

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from .mrkdwn import MESSAGE_LIMIT, split_point, to_mrkdwn
from .threads import SlackThread
from .translator import N_, Translator

THINKING = N_("is thinking…")

STEP_STATES = {
    # state: (Slack's task status, the word shown, the emoji of the context line)
    "running": ("in_progress", N_("running"), ":hourglass_flowing_sand:"),
    "waiting for approval": ("pending", N_("waiting for approval"), ":raised_hand:"),
    "waiting for an answer": ("pending", N_("waiting for an answer"), ":speech_balloon:"),
    "done": ("complete", N_("done"), ":white_check_mark:"),
    "failed": ("error", N_("failed"), ":x:"),
    "declined": ("error", N_("declined"), ":no_entry_sign:"),
}
"""A thinking step's states, and how Slack (pending, in_progress, complete, error) and the line show each."""
DETAIL_LIMIT = 256
"""Characters of a task's details or output that are shown."""


PROGRESS_PACE = 1.0
"""Seconds between two progress lines of one call shown in Slack."""


@dataclass(frozen=True, kw_only=True)
class Step:
    """One tool call as a thinking step of the answer."""

    id: str
    """The tool call's id: a later step with the same id updates it."""
    tool_name: str
    state: str
    """One of `STEP_STATES`."""
    details: str | None = None
    """The arguments, or why it was declined or failed, in a line."""

    def task_chunk(self, tr: Translator) -> dict[str, Any]:
        """The step as Slack's `task_update` streaming chunk."""
        status, word, _ = STEP_STATES[self.state]
        chunk: dict[str, Any] = {"type": "task_update", "id": self.id, "title": self.tool_name, "status": status}
        word = tr.gettext(word)
        details = word if not self.details else tr.gettext("{state}: {details}", state=word, details=self.details)
        chunk["details"] = _cut(details)
        return chunk

    def line(self, tr: Translator) -> str:
        _, word, emoji = STEP_STATES[self.state]
        line = tr.gettext("{tool} {state}", tool=f"`{self.tool_name}`", state=tr.gettext(word))
        return f"{emoji} {line}" + (f" ({_cut(self.details, 80)})" if self.details else "")


def args_line(args: Any) -> str | None:
    """A tool call's arguments in one line, for its step (None without any)."""
    if not args:
        return None
    return json.dumps(args, ensure_ascii=False, separators=(", ", ": "), default=str)


def _cut(text: str, limit: int = DETAIL_LIMIT) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


class ThreadReply:
    """One answer, written into `thread` for `recipient` (the user who asked)."""

    def __init__(
        self,
        client: AsyncWebClient,
        thread: SlackThread,
        *,
        recipient: str,
        streaming: bool = True,
        limit: int = MESSAGE_LIMIT,
        flush_chars: int = 256,
        logger: logging.Logger | None = None,
        status: ThinkingStatus | None = None,
        tr: Translator,
    ):
        self.client = client
        self.tr = tr
        """The conversation's words (its steps' states)."""
        self.status = status
        """The turn's loading status, told of every message this answer starts."""
        self.thread = thread
        self.recipient = recipient
        self.mode = "stream" if streaming else "update"
        self.limit = limit
        self.flush_chars = flush_chars
        self.logger = logger or logging.getLogger(__name__)
        self.posted_ts: list[str] = []
        """The ts of every message this answer wrote."""
        self._text = ""  # the current message's text
        self._sent = 0  # how much of it Slack has
        self._ts: str | None = None
        self._steps: dict[str, Step] = {}
        self._unshown: list[str] = []  # ids of steps kept for the answer's first message (in order)
        self._steps_ts: str | None = None  # the context line's message, where Slack does not stream
        self._progress_shown: dict[str, float] = {}  # call id -> when its last progress line was shown

    async def append(self, text: str) -> None:
        self._text += text
        while len(self._text) > self.limit:
            cut = split_point(self._text, self.limit, start=self._sent)
            head, self._text = self._text[:cut], self._text[cut:]
            await self._deliver(head, final=True)
            self._ts, self._sent = None, 0
        if len(self._text) - self._sent >= self.flush_chars:
            await self._deliver(self._text, final=False)

    def take_back(self, count: int) -> int:
        """Drop the last `count` characters of the current message that Slack does not have yet (text of a step
        the runtime did not store); how many of them Slack already has (they stay)."""
        keep = max(len(self._text) - count, 0)
        shown = max(self._sent - keep, 0)
        self._text = self._text[: max(keep, self._sent)]
        return shown

    @property
    def unsent(self) -> int:
        """Characters of the current message Slack does not have yet."""
        return len(self._text) - self._sent

    @property
    def is_open(self) -> bool:
        """Whether this answer is under way: text written (sent or not yet), or a steps line."""
        return self._ts is not None or self._steps_ts is not None or bool(self._text.strip())

    async def progress(self, step: Step) -> None:
        """A running call's progress line as its step's details: shown at once (opening the answer with the
        step if need be), then at most one line a second per call, which keeps a chatty tool within Slack's
        rate limits; a line that comes sooner is left out (the next one, or the call's result, follows)."""
        now = time.monotonic()
        if now - self._progress_shown.get(step.id, -PROGRESS_PACE) < PROGRESS_PACE:
            return
        self._progress_shown[step.id] = now
        await self.step(step)

    async def step(self, step: Step, *, only_if_open: bool = False) -> None:
        """Show a tool call's step (or its new state): a task in the streamed answer, else the steps line.
        `only_if_open`: not when it would start a message; then it is kept, and shown first in the answer's
        first message (the latest state of each call), if words come (`close`)."""
        earlier = self._steps.get(step.id)
        if earlier is not None and step.details is None and step.state in ("done", "running"):
            step = dataclasses.replace(step, details=earlier.details)  # the arguments stay in view
        self._steps[step.id] = step
        if only_if_open and not self.is_open:
            if step.id not in self._unshown:
                self._unshown.append(step.id)
            return
        if step.id in self._unshown:
            self._unshown.remove(step.id)
        await self._show([step])

    async def _show(self, steps: list[Step]) -> None:
        if self.mode == "stream":
            try:
                await self._stream_chunks([step.task_chunk(self.tr) for step in steps])
                return
            except SlackApiError as exc:
                if self._ts is not None:
                    raise
                self._fall_back(exc)
        await self._show_steps_line()

    def _unshown_chunks(self) -> list[dict[str, Any]]:
        """The steps kept while no message was open, as chunks for the one that opens now (`_started`
        forgets them once it has)."""
        return [self._steps[step_id].task_chunk(self.tr) for step_id in self._unshown]

    async def _stream_chunks(self, chunks: list[dict[str, Any]]) -> None:
        unsent = self._text[self._sent :]
        if unsent:  # the text so far comes before the step
            chunks = [{"type": "markdown_text", "text": unsent}, *chunks]
        if self._ts is None:
            chunks = [*self._unshown_chunks(), *chunks]
            response = await self.client.chat_startStream(
                channel=self.thread.channel,
                thread_ts=self.thread.thread_ts,
                recipient_team_id=self.thread.team_id,
                recipient_user_id=self.recipient,
                chunks=chunks,
            )
            self._started(str(response["ts"]))
        else:
            await self.client.chat_appendStream(channel=self.thread.channel, ts=self._ts, chunks=chunks)
        self._sent = len(self._text)

    async def _show_steps_line(self) -> None:
        self._unshown = []  # the line shows every step
        line = " · ".join(step.line(self.tr) for step in self._steps.values())
        blocks = [{"type": "context", "elements": [{"type": "mrkdwn", "text": line}]}]
        if self._steps_ts is None:
            response = await self.client.chat_postMessage(
                channel=self.thread.channel, thread_ts=self.thread.thread_ts, text=line, blocks=blocks
            )
            self._steps_ts = str(response["ts"])
            if self.status is not None:
                self.status.replied()
        else:
            await self.client.chat_update(channel=self.thread.channel, ts=self._steps_ts, text=line, blocks=blocks)

    def _started(self, ts: str) -> None:
        self._ts = ts
        self._unshown = []  # shown first in it
        self.posted_ts.append(ts)
        if self.status is not None:
            self.status.replied()

    def _fall_back(self, exc: SlackApiError) -> None:
        self.logger.info("streaming refused (%s); posting and updating instead", exc.response.get("error"))
        self.mode = "update"
        self.flush_chars = max(self.flush_chars, 400)  # fewer chat.update calls than stream appends

    async def close(self, *, feedback: dict[str, Any] | None = None) -> None:
        """Finish the current message (nothing is posted for an answer without text); `feedback` (the
        feedback buttons' block) goes under it when it has text. Steps kept for a message that never opened
        go with its text, and without text they are not shown: an answer that ends without words here went
        on elsewhere (another replica, or recovery, shows what follows), or waits (its approval message
        shows the wait), and a message of cards alone says nothing."""
        if not self._text.strip():
            self._unshown = []
        blocks = [feedback] if feedback is not None and self._text.strip() else None
        if self._text.strip() or self._ts is not None:
            await self._deliver(self._text, final=True, blocks=blocks)
        self._text, self._sent, self._ts = "", 0, None

    async def _deliver(self, text: str, *, final: bool, blocks: list[dict[str, Any]] | None = None) -> None:
        if self.mode == "stream":
            try:
                await self._stream(text, final=final, blocks=blocks)
                return
            except SlackApiError as exc:
                if self._ts is not None:
                    raise
                self._fall_back(exc)
        await self._post_or_update(text, blocks=blocks)

    async def _stream(self, text: str, *, final: bool, blocks: list[dict[str, Any]] | None = None) -> None:
        unsent = text[self._sent :]
        if self._ts is None:
            steps = self._unshown_chunks()  # the steps so far come first
            text_chunks = [{"type": "markdown_text", "text": unsent}] if unsent else []
            response = await self.client.chat_startStream(
                channel=self.thread.channel,
                thread_ts=self.thread.thread_ts,
                recipient_team_id=self.thread.team_id,
                recipient_user_id=self.recipient,
                **({"chunks": [*steps, *text_chunks]} if steps else {"markdown_text": unsent or None}),
            )
            self._started(str(response["ts"]))
        elif unsent:
            await self.client.chat_appendStream(channel=self.thread.channel, ts=self._ts, markdown_text=unsent)
        self._sent = len(text)
        if final:  # Slack renders `blocks` at the bottom of the finished message
            assert self._ts is not None, "a stream is started before it is stopped"
            await self.client.chat_stopStream(channel=self.thread.channel, ts=self._ts, blocks=blocks)

    async def _post_or_update(self, text: str, *, blocks: list[dict[str, Any]] | None = None) -> None:
        if not text.strip():
            return
        mrkdwn = to_mrkdwn(text)
        # A message with blocks shows them instead of its text: the text goes first, in sections.
        shown = [*text_sections(mrkdwn), *blocks] if blocks else None
        if self._ts is None and self._unshown and self._steps_ts is None:  # the steps so far first, in their line
            await self._show_steps_line()
        if self._ts is None:
            response = await self.client.chat_postMessage(
                channel=self.thread.channel, thread_ts=self.thread.thread_ts, text=mrkdwn, mrkdwn=True, blocks=shown
            )
            self._started(str(response["ts"]))
        elif len(text) > self._sent or shown:
            await self.client.chat_update(channel=self.thread.channel, ts=self._ts, text=mrkdwn, blocks=shown)
        self._sent = len(text)


SECTION_LIMIT = 3000
"""Characters of a section block's text."""


def text_sections(mrkdwn: str) -> list[dict[str, Any]]:
    """A message's mrkdwn text as section blocks of at most `SECTION_LIMIT` characters each."""
    sections = []
    while mrkdwn:
        cut = split_point(mrkdwn, SECTION_LIMIT)
        sections.append({"type": "section", "text": {"type": "mrkdwn", "text": mrkdwn[:cut]}})
        mrkdwn = mrkdwn[cut:]
    return sections


class ThinkingStatus:
    """The loading status under a thread during one turn ("is thinking…", "is running get-weather…").

    Slack clears the status itself when the app posts a reply in the thread, so a turn clears it only if
    it set one after its last new message (`clear`): a plain turn makes one `setStatus` call, not two.
    Whatever posts a new message for the turn tells it (`replied`).
    """

    def __init__(self, client: AsyncWebClient, thread: SlackThread, tr: Translator):
        self.client = client
        self.thread = thread
        self.tr = tr
        """The conversation's words."""
        self.showing = False
        """Whether a status this turn set may still show (none posted since)."""

    async def show(self, status: str | None = None) -> None:
        """Show `status` (default: "is thinking…" in the conversation's words) under the thread (nothing where
        Slack does not offer it)."""
        self.showing = await self._set(status or self.tr.gettext(THINKING)) or self.showing

    def replied(self) -> None:
        """A new message was posted in the thread: Slack took the status away."""
        self.showing = False

    async def clear(self) -> None:
        """Take the status away if nothing posted since has done it."""
        if self.showing and await self._set(""):
            self.showing = False

    async def _set(self, status: str) -> bool:
        """Whether Slack set it. A status is never worth a turn: whatever Slack or the network does, no
        error leaves here (the turn asks for it beside the run's start, `conversation.run_turn`)."""
        try:
            await self.client.assistant_threads_setStatus(
                channel_id=self.thread.channel, thread_ts=self.thread.thread_ts, status=status
            )
            return True
        except (SlackApiError, aiohttp.ClientError, OSError, TimeoutError) as exc:
            logging.getLogger("bot.slack").warning("could not set the status of %s: %s", self.thread.thread_id, exc)
            return False
