"""Block Kit for a question a tool asked with `suspend()`: the open question with its Answer button, and the
same message once answered. Pure functions; tested without Slack."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from slack_sdk.models.blocks import ActionsBlock, Block, ButtonElement, ContextBlock, MarkdownTextObject, SectionBlock

from .approval_builder import format_args, slack_date
from .mrkdwn import escape

ANSWER = "tool_answer"
OPEN_URL = "tool_question_url"
DECLINE_QUESTION = "tool_question_decline"
CANCEL_QUESTION = "tool_question_cancel"
ANSWER_BLOCK_ID = "tool_call_answer"
_QUESTION_KEYS = ("question", "message", "prompt", "text")


@dataclass(frozen=True, kw_only=True)
class QuestionView:
    """What a question message shows."""

    ref: str
    """The opaque reference the Answer button carries."""
    tool_name: str
    suspend_payload: Any
    """What the tool suspended with."""
    requester: str
    answerable_by_form: bool = True
    """False when the tool declares no resume schema: the answer can only be given in the thread."""
    declinable: bool = False
    """A live question (an MCP server's): Decline and Cancel buttons, whose answer the server hears."""
    url: str | None = None
    """A question answered on a page (an MCP server's URL mode): a link button; the call waits for the server."""


@dataclass(frozen=True, kw_only=True)
class AnswerView:
    """How a question was answered."""

    answered_by: str | None
    """Who answered through the form; None when the answer came from a message in the thread."""
    answered_at: datetime | None
    resume_data: Any = None
    refused: str | None = None
    """"declined" or "cancelled" when the question was not answered (the server heard `decline` / `cancel`)."""
    refused_by: str | None = None
    """Who declined or cancelled it; None for the bot (nobody answered in time)."""


def question_of(suspend_payload: Any) -> str:
    """The human question in a suspend payload: its `question` (or `message`, `prompt`, `text`) string,
    the payload itself if it is a string, else the payload as JSON."""
    if isinstance(suspend_payload, str):
        return suspend_payload
    if isinstance(suspend_payload, dict):
        for key in _QUESTION_KEYS:
            if isinstance(suspend_payload.get(key), str):
                return suspend_payload[key]
    return json.dumps(suspend_payload, ensure_ascii=False, default=str)


def question_text(view: QuestionView) -> str:
    return f"{view.tool_name} asks: {question_of(view.suspend_payload)}"


def build_question_blocks(view: QuestionView) -> list[Block]:
    """The open question, how to answer it, and the Answer button (when a form can be offered)."""
    if view.url:
        how = "open the page to answer; the bot goes on when the server has the answer"
    elif view.answerable_by_form:
        how = "reply in this thread or use the form"
    else:
        how = "reply in this thread"
    blocks: list[Block] = [
        *_describe(view),
        ContextBlock(elements=[MarkdownTextObject(text=f"<@{view.requester}>, {how}.")]),
    ]
    buttons: list[ButtonElement] = []
    if view.url:
        buttons.append(
            ButtonElement(
                text="Open the page", action_id=OPEN_URL, value=view.ref, url=view.url[:3000], style="primary"
            )
        )
    elif view.answerable_by_form:
        buttons.append(ButtonElement(text="Answer", action_id=ANSWER, value=view.ref, style="primary"))
    if view.declinable:
        buttons.append(ButtonElement(text="Decline", action_id=DECLINE_QUESTION, value=view.ref, style="danger"))
        buttons.append(ButtonElement(text="Cancel", action_id=CANCEL_QUESTION, value=view.ref))
    if buttons:
        blocks.append(ActionsBlock(block_id=ANSWER_BLOCK_ID, elements=buttons))
    return blocks


def build_answered_question_blocks(view: QuestionView, answer: AnswerView) -> list[Block]:
    """The question once answered: no button; who answered, when, and with what."""
    if answer.refused:
        verb = "Declined" if answer.refused == "declined" else "Cancelled"
        who = f" by <@{answer.refused_by}>" if answer.refused_by else " (nobody answered in time)"
        when = f" on {slack_date(answer.answered_at)}" if answer.answered_at else ""
        told = {"declined": "decline", "cancelled": "cancel"}.get(answer.refused, answer.refused)
        line = f":no_entry_sign: {verb}{who}{when}; the MCP server was told `{told}`"
        return [*_describe(view), SectionBlock(text=MarkdownTextObject(text=line))]
    if answer.answered_by:
        line = f":white_check_mark: Answered by <@{answer.answered_by}> on {slack_date(answer.answered_at)}"
    elif answer.resume_data is not None:
        # what the bot read from the message, so a misreading shows at once
        line = f":white_check_mark: Answered in the thread: {escape(answer_summary(answer.resume_data))}"
    else:
        line = ":white_check_mark: Answered in the thread"
    blocks = [*_describe(view), SectionBlock(text=MarkdownTextObject(text=line))]
    if answer.answered_by and answer.resume_data is not None:
        blocks.append(SectionBlock(text=MarkdownTextObject(text=format_args(answer.resume_data))))
    return blocks


def answer_summary(resume_data: Any) -> str:
    """The values an answer resumed with, in plain words: `confirmed = no, city = Paris`."""

    def plain(value: Any) -> str:
        if isinstance(value, bool):
            return "yes" if value else "no"
        if isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False, default=str)

    if isinstance(resume_data, dict):
        return ", ".join(f"{key} = {plain(value)}" for key, value in resume_data.items())[:2500]
    return plain(resume_data)[:2500]


def _describe(view: QuestionView) -> list[Block]:
    question = escape(question_of(view.suspend_payload)[:2500])
    return [SectionBlock(text=MarkdownTextObject(text=f":question: *`{escape(view.tool_name)}` asks:* {question}"))]
