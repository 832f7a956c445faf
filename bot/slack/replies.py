"""Write one answer of the agent into a Slack thread as it is generated.

Streams with `chat.startStream`/`appendStream`/`stopStream` (Slack renders the Markdown itself); where
Slack refuses streaming (older workspaces, some channel types) it posts the text converted to mrkdwn
and edits it with `chat.update` as it grows. Either way an answer longer than one message continues
in the next one.
"""

from __future__ import annotations

import logging

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from .mrkdwn import MESSAGE_LIMIT, split_point, to_mrkdwn
from .threads import SlackThread

THINKING = "is thinking…"


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
    ):
        self.client = client
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

    async def append(self, text: str) -> None:
        self._text += text
        while len(self._text) > self.limit:
            cut = split_point(self._text, self.limit, start=self._sent)
            head, self._text = self._text[:cut], self._text[cut:]
            await self._deliver(head, final=True)
            self._ts, self._sent = None, 0
        if len(self._text) - self._sent >= self.flush_chars:
            await self._deliver(self._text, final=False)

    async def close(self) -> None:
        """Finish the current message (nothing is posted for an answer without text)."""
        if self._text.strip() or self._ts is not None:
            await self._deliver(self._text, final=True)
        self._text, self._sent, self._ts = "", 0, None

    async def _deliver(self, text: str, *, final: bool) -> None:
        if self.mode == "stream":
            try:
                await self._stream(text, final=final)
                return
            except SlackApiError as exc:
                if self._ts is not None:
                    raise
                self.logger.info("streaming refused (%s); posting and updating instead", exc.response.get("error"))
                self.mode = "update"
                self.flush_chars = max(self.flush_chars, 400)  # fewer chat.update calls than stream appends
        await self._post_or_update(text)

    async def _stream(self, text: str, *, final: bool) -> None:
        unsent = text[self._sent :]
        if self._ts is None:
            response = await self.client.chat_startStream(
                channel=self.thread.channel,
                thread_ts=self.thread.thread_ts,
                recipient_team_id=self.thread.team_id,
                recipient_user_id=self.recipient,
                markdown_text=unsent or None,
            )
            self._ts = str(response["ts"])
            self.posted_ts.append(self._ts)
        elif unsent:
            await self.client.chat_appendStream(channel=self.thread.channel, ts=self._ts, markdown_text=unsent)
        self._sent = len(text)
        if final:
            await self.client.chat_stopStream(channel=self.thread.channel, ts=self._ts)

    async def _post_or_update(self, text: str) -> None:
        if not text.strip():
            return
        mrkdwn = to_mrkdwn(text)
        if self._ts is None:
            response = await self.client.chat_postMessage(
                channel=self.thread.channel, thread_ts=self.thread.thread_ts, text=mrkdwn, mrkdwn=True
            )
            self._ts = str(response["ts"])
            self.posted_ts.append(self._ts)
        elif len(text) > self._sent:
            await self.client.chat_update(channel=self.thread.channel, ts=self._ts, text=mrkdwn)
        self._sent = len(text)


async def set_thinking(client: AsyncWebClient, thread: SlackThread, status: str = THINKING) -> bool:
    """Show (or, with "", clear) the thinking status under the thread; False where Slack does not offer it."""
    try:
        await client.assistant_threads_setStatus(channel_id=thread.channel, thread_ts=thread.thread_ts, status=status)
        return True
    except SlackApiError:
        return False
