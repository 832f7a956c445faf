"""Block Kit for a question a tool asked with `suspend()`: the open question with its Answer button, and the
same message once answered. Pure functions of the view and the reader's `Translator`; tested without Slack."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from slack_sdk.models.blocks import ActionsBlock, Block, ButtonElement, ContextBlock, MarkdownTextObject, SectionBlock

from .approval_builder import format_args
from .mrkdwn import escape, escape_within, slack_date
from .translator import Translator

ANSWER = "tool_answer"
OPEN_URL = "tool_question_url"
DECLINE_QUESTION = "tool_question_decline"
CANCEL_QUESTION = "tool_question_cancel"
SHOW_QUESTION = "tool_full_question"
"""The button under a question too long for the message: it opens a modal with the whole of it."""
ANSWER_BLOCK_ID = "tool_call_answer"
QUESTION_SHOWN = 2500
"""Characters of a question the message shows (escaped; a section's text takes at most 3,000)."""
QUESTION_NOTIFIED = 300
"""Characters of a question in the message's `text` (the notification; Slack refuses past 40,000)."""
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
    """A live question (an MCP server's): a Decline button, whose answer the server hears (every question
    has a Cancel button)."""
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
    """"declined" or "cancelled" when the question was not answered (a live one's server heard `decline` /
    `cancel`), "expired" when nobody answered within its tool policy's expiry."""
    refused_by: str | None = None
    """Who declined or cancelled it; None for the bot (nobody answered in time)."""
    live: bool = True
    """It was a live question (an MCP server's), whose server heard `decline` / `cancel`."""


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


def question_text(view: QuestionView, tr: Translator) -> str:
    question = question_of(view.suspend_payload)
    if len(question) > QUESTION_NOTIFIED:
        question = question[:QUESTION_NOTIFIED] + "…"
    return tr.gettext("{tool} asks: {question}", tool=view.tool_name[:100], question=question)


def question_is_cut(view: QuestionView) -> bool:
    """Whether the message shows only the start of the question (the rest is behind `SHOW_QUESTION`)."""
    question = question_of(view.suspend_payload)
    return escape_within(question, QUESTION_SHOWN)[1] < len(question)


def build_question_blocks(view: QuestionView, tr: Translator) -> list[Block]:
    """The open question, how to answer it, and the Answer button (when a form can be offered)."""
    requester = f"<@{view.requester}>"
    if view.url:
        how = tr.gettext(
            "{user}, open the page to answer; the bot goes on when the server has the answer.", user=requester
        )
    elif view.answerable_by_form:
        how = tr.gettext("{user}, reply in this thread or use the form.", user=requester)
    else:
        how = tr.gettext("{user}, reply in this thread.", user=requester)
    blocks: list[Block] = [*_describe(view, tr), ContextBlock(elements=[MarkdownTextObject(text=how)])]
    buttons: list[ButtonElement] = []
    if view.url:
        open_page = tr.gettext("Open the page")
        buttons.append(
            ButtonElement(text=open_page, action_id=OPEN_URL, value=view.ref, url=view.url[:3000], style="primary")
        )
    elif view.answerable_by_form:
        buttons.append(ButtonElement(text=tr.gettext("Answer"), action_id=ANSWER, value=view.ref, style="primary"))
    if view.declinable:
        decline = tr.gettext("Decline")
        buttons.append(ButtonElement(text=decline, action_id=DECLINE_QUESTION, value=view.ref, style="danger"))
    # whoever may answer (or an admin) may withdraw the question: a live one's server hears `cancel`
    buttons.append(ButtonElement(text=tr.gettext("Cancel"), action_id=CANCEL_QUESTION, value=view.ref))
    if question_is_cut(view):
        buttons.append(_show_question_button(view, tr))
    if buttons:
        blocks.append(ActionsBlock(block_id=ANSWER_BLOCK_ID, elements=buttons))
    return blocks


def build_answered_question_blocks(view: QuestionView, answer: AnswerView, tr: Translator) -> list[Block]:
    """The question once answered: no button; who answered, when, and with what."""
    if answer.refused == "expired":  # nobody answered within the tool policy's expiry
        date = slack_date(answer.answered_at) if answer.answered_at else None
        said = (
            tr.gettext("Expired on {date}: nobody answered in time.", date=date)
            if date
            else tr.gettext("Expired: nobody answered in time.")
        )
        return [*_describe(view, tr), SectionBlock(text=MarkdownTextObject(text=f":hourglass: {said}")),
                *_show_question(view, tr)]  # fmt: skip
    if answer.refused:
        line = f":no_entry_sign: {_refusal(answer, tr)}"
        return [*_describe(view, tr), SectionBlock(text=MarkdownTextObject(text=line)), *_show_question(view, tr)]
    if answer.answered_by and answer.answered_at:
        done = tr.gettext(
            "Answered by {user} on {date}.", user=f"<@{answer.answered_by}>", date=slack_date(answer.answered_at)
        )
    elif answer.answered_by:
        done = tr.gettext("Answered by {user}.", user=f"<@{answer.answered_by}>")
    elif answer.resume_data is not None:
        # what the bot read from the message, so a misreading shows at once
        done = tr.gettext("Answered in the thread: {answer}", answer=escape(answer_summary(answer.resume_data, tr)))
    else:
        done = tr.gettext("Answered in the thread.")
    blocks = [*_describe(view, tr), SectionBlock(text=MarkdownTextObject(text=f":white_check_mark: {done}"))]
    if answer.answered_by and answer.resume_data is not None:
        blocks.append(SectionBlock(text=MarkdownTextObject(text=format_args(answer.resume_data, tr))))
    return [*blocks, *_show_question(view, tr)]


def _show_question_button(view: QuestionView, tr: Translator) -> ButtonElement:
    return ButtonElement(text=tr.gettext("Show the whole question"), action_id=SHOW_QUESTION, value=view.ref)


def _show_question(view: QuestionView, tr: Translator) -> list[Block]:
    """The whole question stays one click away once a cut one is answered."""
    if not question_is_cut(view):
        return []
    return [ActionsBlock(block_id=ANSWER_BLOCK_ID, elements=[_show_question_button(view, tr)])]


def _refusal(answer: AnswerView, tr: Translator) -> str:
    """Who declined or cancelled a live question, when, and what its MCP server heard (`decline`/`cancel`,
    the protocol's words, not translated)."""
    user = f"<@{answer.refused_by}>"
    date = slack_date(answer.answered_at) if answer.answered_at else None
    if answer.refused == "declined":
        told = "decline"
        if not answer.refused_by:
            who = tr.gettext("Declined: nobody answered in time.")
        elif date:
            who = tr.gettext("Declined by {user} on {date}.", user=user, date=date)
        else:
            who = tr.gettext("Declined by {user}.", user=user)
    else:
        told = "cancel" if answer.refused == "cancelled" else str(answer.refused)
        if not answer.refused_by:
            who = tr.gettext("Cancelled: nobody answered in time.")
        elif date:
            who = tr.gettext("Cancelled by {user} on {date}.", user=user, date=date)
        else:
            who = tr.gettext("Cancelled by {user}.", user=user)
    if not answer.live:
        return who
    return f"{who} {tr.gettext('The MCP server was told {answer}.', answer=f'`{told}`')}"


def answer_summary(resume_data: Any, tr: Translator) -> str:
    """The values an answer resumed with, in plain words: `confirmed = no, city = Paris`."""

    def plain(value: Any) -> str:
        if isinstance(value, bool):
            return tr.gettext("yes") if value else tr.gettext("no")
        if isinstance(value, str):
            return value
        return json.dumps(value, ensure_ascii=False, default=str)

    if isinstance(resume_data, dict):
        return ", ".join(f"{key} = {plain(value)}" for key, value in resume_data.items())[:2500]
    return plain(resume_data)[:2500]


def _describe(view: QuestionView, tr: Translator) -> list[Block]:
    """The question, cut to what a section takes; a cut one says so (and its message offers the rest)."""
    whole = question_of(view.suspend_payload)
    question, kept = escape_within(whole, QUESTION_SHOWN)
    if kept < len(whole):
        question += " " + cut_note(len(whole) - kept, tr)
    asks = tr.gettext("*{tool} asks:* {question}", tool=f"`{escape(view.tool_name[:100])}`", question=question)
    return [SectionBlock(text=MarkdownTextObject(text=f":question: {asks}"))]


def cut_note(more: int, tr: Translator) -> str:
    """Where a question shown in part was cut, and where the rest is."""
    button = tr.gettext("Show the whole question")
    return tr.gettext("… _(cut here: {count} more characters under *{button}*)_", count=f"{more:,}", button=button)
