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


@dataclass(frozen=True, kw_only=True)
class AnswerView:
    """How a question was answered."""

    answered_by: str | None
    """Who answered through the form; None when the answer came from a message in the thread."""
    answered_at: datetime | None
    resume_data: Any = None


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
    how = "reply in this thread or use the form" if view.answerable_by_form else "reply in this thread"
    blocks: list[Block] = [
        *_describe(view),
        ContextBlock(elements=[MarkdownTextObject(text=f"<@{view.requester}>, {how}.")]),
    ]
    if view.answerable_by_form:
        blocks.append(
            ActionsBlock(
                block_id=ANSWER_BLOCK_ID,
                elements=[ButtonElement(text="Answer", action_id=ANSWER, value=view.ref, style="primary")],
            )
        )
    return blocks


def build_answered_question_blocks(view: QuestionView, answer: AnswerView) -> list[Block]:
    """The question once answered: no button; who answered, when, and with what."""
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
