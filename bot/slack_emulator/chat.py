"""The chat methods of the Web API: messages (post, update, delete, ephemeral), streamed answers
(chat.*Stream, with their chunks checked as Slack documents them) and the assistant thread's status
and suggested prompts."""

from __future__ import annotations

from typing import Any

from .checks import MAX_TEXT, Answer, ApiMethods, SlackError, blocks_of, content, required
from .workspace import BOT_USER_ID, Message


class ChatMethods(ApiMethods):
    def chat_post_message(self, p: dict[str, Any]) -> Answer:
        channel = self._channel(p)
        text, blocks = content(p)
        message = self.workspace.post(channel, BOT_USER_ID, text, blocks=blocks, thread_ts=p.get("thread_ts") or None)
        return {"ok": True, "channel": channel, "ts": message.ts, "message": message.to_api()}

    def chat_update(self, p: dict[str, Any]) -> Answer:
        channel = self._channel(p)
        message = self._message(channel, p)
        if message.user != BOT_USER_ID:
            raise SlackError("cant_update_message")
        if p.get("text") is None and "blocks" not in p and "attachments" not in p:
            raise SlackError("no_text")
        if len(str(p.get("text") or "")) > MAX_TEXT:
            raise SlackError("msg_too_long")
        message.history.append({"text": message.text, "blocks": message.blocks})
        if p.get("text") is not None:
            message.text = str(p["text"])
        if "blocks" in p:  # absent: the blocks stay; [] removes them, as in Slack
            message.blocks = blocks_of(p.get("blocks"))
        message.format = "mrkdwn"
        message.edited = True
        self.workspace.changed(message)
        return {"ok": True, "channel": channel, "ts": message.ts, "text": message.text, "message": message.to_api()}

    def chat_delete(self, p: dict[str, Any]) -> Answer:
        channel = self._channel(p)
        message = self._message(channel, p)
        if message.user != BOT_USER_ID:
            raise SlackError("cant_delete_message")
        del self.workspace.messages[(channel, message.ts)]
        self.workspace.changed(message)
        return {"ok": True, "channel": channel, "ts": message.ts}

    def chat_post_ephemeral(self, p: dict[str, Any]) -> Answer:
        channel_id = self._channel(p)
        user = str(p.get("user") or "")
        if user not in self.workspace.people:
            raise SlackError("user_not_found")
        if not self.workspace.channels[channel_id].visible_to(user):
            raise SlackError("user_not_in_channel")
        text, blocks = content(p)
        message = self.workspace.post(
            channel_id, BOT_USER_ID, text, blocks=blocks, thread_ts=p.get("thread_ts") or None, ephemeral_to=user
        )
        return {"ok": True, "message_ts": message.ts}


class StreamMethods(ApiMethods):
    def chat_start_stream(self, p: dict[str, Any]) -> Answer:
        if not self.streaming:
            raise SlackError("unknown_method")
        channel_id = self._channel(p)
        thread_ts = required(p, "thread_ts")
        if not self.workspace.channels[channel_id].is_im and not (
            p.get("recipient_user_id") and p.get("recipient_team_id")
        ):
            raise SlackError("invalid_arguments")  # required when streaming to a channel
        mode = p.get("task_display_mode") or "timeline"
        if mode not in TASK_DISPLAY_MODES:
            raise SlackError("invalid_arguments")
        chunks = stream_chunks(p)
        message = self.workspace.post(
            channel_id, BOT_USER_ID, stream_text(p), thread_ts=thread_ts, format="markdown", streaming=True
        )
        if mode == "plan":
            message.blocks = [{"type": "plan", "block_id": "plan", "title": "", "tasks": []}]
        apply_task_chunks(message, chunks)
        return {"ok": True, "channel": channel_id, "ts": message.ts}

    def chat_append_stream(self, p: dict[str, Any]) -> Answer:
        message = self._streaming_message(p)
        if not p.get("markdown_text") and not p.get("chunks"):
            raise SlackError("invalid_arguments")
        chunks = stream_chunks(p)
        message.text += stream_text(p)
        apply_task_chunks(message, chunks)
        self.workspace.changed(message)
        return {"ok": True, "channel": message.channel, "ts": message.ts}

    def chat_stop_stream(self, p: dict[str, Any]) -> Answer:
        message = self._streaming_message(p)
        chunks = stream_chunks(p)
        bottom = blocks_of(p.get("blocks"))  # checked before anything changes: a refused call changes nothing
        message.text += stream_text(p)
        apply_task_chunks(message, chunks)
        message.streaming = False
        if bottom:  # "rendered at the bottom of the finalized message"
            message.blocks = [*message.blocks, *bottom]
        self.workspace.changed(message)
        return {"ok": True, "channel": message.channel, "ts": message.ts, "message": message.to_api()}

    def set_status(self, p: dict[str, Any]) -> Answer:
        channel_id = self.workspace.channel_id(required(p, "channel_id"))
        if channel_id not in self.workspace.channels:
            raise SlackError("channel_not_found")
        thread_ts = required(p, "thread_ts")
        if "status" not in p:
            raise SlackError("invalid_arguments")
        self.workspace.set_status(channel_id, thread_ts, str(p.get("status") or ""))
        return {"ok": True}

    def set_suggested_prompts(self, p: dict[str, Any]) -> Answer:
        """`channel_id` and `prompts` (1 to 4 objects of `title` and `message`) required, `title` optional."""
        channel_id = self.workspace.channel_id(required(p, "channel_id"))
        if channel_id not in self.workspace.channels:
            raise SlackError("channel_not_found")
        prompts = p.get("prompts")
        if not isinstance(prompts, list) or not 1 <= len(prompts) <= 4:
            raise SlackError("invalid_arguments")
        for prompt in prompts:
            if not isinstance(prompt, dict) or set(prompt) != {"title", "message"}:
                raise SlackError("invalid_arguments")
            if not all(isinstance(prompt[k], str) and prompt[k] for k in ("title", "message")):
                raise SlackError("invalid_arguments")
        self.workspace.suggested_prompts[channel_id] = {"title": str(p.get("title") or ""), "prompts": prompts}
        self.workspace.changed()
        return {"ok": True}


CHUNK_TYPES = ("markdown_text", "task_update", "plan_update", "blocks")
TASK_STATUSES = ("pending", "in_progress", "complete", "error")
TASK_DISPLAY_MODES = ("timeline", "plan")
MARKDOWN_LIMIT = 12_000
"""chat.*Stream's markdown_text: "Limit this field to 12,000 characters"."""


def stream_chunks(p: dict[str, Any]) -> list[dict[str, Any]]:
    """The `chunks` of a chat.*Stream call, checked as Slack documents them: a list of objects typed
    `markdown_text` {text}, `task_update` {id, title, status: pending|in_progress|complete|error, details?,
    output?, sources?}, `plan_update` {title} or `blocks` {blocks}; anything else is `invalid_arguments`."""
    chunks = p.get("chunks")
    if chunks is None:
        chunks = []
    if not isinstance(chunks, list) or not all(isinstance(c, dict) for c in chunks):
        raise SlackError("invalid_arguments")
    if len(str(p.get("markdown_text") or "")) > MARKDOWN_LIMIT:
        raise SlackError("msg_too_long")
    for chunk in chunks:
        kind = chunk.get("type")
        if kind not in CHUNK_TYPES:
            raise SlackError("invalid_arguments")
        if kind == "markdown_text" and (not isinstance(chunk.get("text"), str) or len(chunk["text"]) > MARKDOWN_LIMIT):
            raise SlackError("invalid_arguments")
        if kind == "task_update":
            if not all(isinstance(chunk.get(k), str) and chunk[k] for k in ("id", "title")):
                raise SlackError("invalid_arguments")
            if chunk.get("status") not in TASK_STATUSES:
                raise SlackError("invalid_arguments")
            if any(k in chunk and not isinstance(chunk[k], str) for k in ("details", "output")):
                raise SlackError("invalid_arguments")
            if not isinstance(chunk.get("sources", []), list):
                raise SlackError("invalid_arguments")
        if kind == "plan_update" and not (isinstance(chunk.get("title"), str) and chunk["title"]):
            raise SlackError("invalid_arguments")
        if kind == "blocks":
            blocks_of(chunk.get("blocks"))
    return chunks


def apply_task_chunks(message: Message, chunks: list[dict[str, Any]]) -> None:
    """What task, plan and blocks chunks leave in the message, as Block Kit: a `task_card` per task id (a
    later update of the same id changes it in place), inside the `plan` block when the stream shows a plan."""
    for chunk in chunks:
        if chunk["type"] == "blocks":
            message.blocks = [*message.blocks, *blocks_of(chunk["blocks"])]
            continue
        plan = next((b for b in message.blocks if b.get("type") == "plan"), None)
        if chunk["type"] == "plan_update":
            if plan is None:
                plan = {"type": "plan", "block_id": "plan", "title": "", "tasks": []}
                message.blocks = [plan, *message.blocks]
            plan["title"] = chunk["title"]
        elif chunk["type"] == "task_update":
            cards = plan["tasks"] if plan is not None else message.blocks
            card = next((b for b in cards if b.get("type") == "task_card" and b.get("task_id") == chunk["id"]), None)
            if card is None:
                card = {"type": "task_card", "block_id": f"task-{chunk['id']}", "task_id": chunk["id"]}
                cards.append(card)
            card.update(title=chunk["title"], status=chunk["status"])
            for key in ("details", "output"):
                if key in chunk:
                    card[key] = rich_text(chunk[key])
            if "sources" in chunk:
                card["sources"] = chunk["sources"]


def rich_text(text: str) -> dict[str, Any]:
    return {
        "type": "rich_text",
        "elements": [{"type": "rich_text_section", "elements": [{"type": "text", "text": text}]}],
    }


def stream_text(p: dict[str, Any]) -> str:
    """The Markdown a streaming call adds: `markdown_text` and the text of its `markdown_text` chunks."""
    text = str(p.get("markdown_text") or "")
    for chunk in p.get("chunks") or []:
        if isinstance(chunk, dict) and chunk.get("type") == "markdown_text":
            text += str(chunk.get("text") or "")
    return text
