"""Block Kit modals: decline with a reason, edit a call's arguments, answer a tool's question.

Each modal carries the clicked message's opaque reference in `private_metadata`; the submission
handler trusts nothing in it until the reference is checked again. Pure functions of what the modal shows and
the reader's `Translator` (a modal is seen by the one person who opened it: in their language).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import (
    ContextBlock,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    PlainTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from .approval_builder import format_args
from .form_builder import build_form_blocks
from .mrkdwn import escape, escape_within, split_point
from .question_builder import cut_note, question_of
from .translator import Translator

SECTION_LIMIT = 3000
"""Characters of a section's text (Slack's limit)."""
QUESTION_SECTIONS = 30
"""Sections of the modal with a whole question (up to 90,000 characters, well within the 100 blocks a
view holds and a request body Slack takes); a question longer than that is cut there, saying so."""

DECLINE_REASON_CALLBACK = "tool_decline_reason"
EDIT_ARGS_CALLBACK = "tool_edit_args"
ANSWER_CALLBACK = "tool_answer"
REASON_BLOCK_ID = "reason"
REASON_ACTION = "value"


@dataclass(frozen=True, kw_only=True)
class ModalTarget:
    """The waiting call a modal acts on, as shown to the user."""

    ref: str
    tool_name: str


def build_decline_reason_modal(target: ModalTarget, args: Any, tr: Translator) -> View:
    """Ask why the call is declined; the reason goes to the model and onto the message."""
    tool = f"`{escape(target.tool_name)}`"
    return View(
        type="modal",
        callback_id=DECLINE_REASON_CALLBACK,
        private_metadata=target.ref,
        title=tr.gettext("Decline"),
        submit=tr.gettext("Decline"),
        close=tr.gettext("Cancel"),
        blocks=[
            SectionBlock(text=MarkdownTextObject(text=tr.gettext("Decline {tool} with:", tool=tool))),
            SectionBlock(text=MarkdownTextObject(text=format_args(args, tr, limit=1500))),
            InputBlock(
                block_id=REASON_BLOCK_ID,
                label=tr.gettext("Reason"),
                element=PlainTextInputElement(action_id=REASON_ACTION, multiline=True, max_length=1000),
            ),
        ],
    )


def build_edit_args_modal(target: ModalTarget, input_schema: dict[str, Any], args: Any, tr: Translator) -> View:
    """The call's arguments as a form generated from the tool's input schema; submitting approves them."""
    tool = f"`{escape(target.tool_name)}`"
    how = tr.gettext("Change the arguments of {tool}, then approve the edited call.", tool=tool)
    return View(
        type="modal",
        callback_id=EDIT_ARGS_CALLBACK,
        private_metadata=target.ref,
        title=tr.gettext("Edit and approve"),
        submit=tr.gettext("Approve"),
        close=tr.gettext("Cancel"),
        blocks=[SectionBlock(text=MarkdownTextObject(text=how)), *build_form_blocks(input_schema, tr, args)],
    )


def build_question_modal(tool_name: str, question: str, tr: Translator) -> View:
    """The whole of a question too long for its message, as plain text in sections Slack takes; one
    longer than the modal holds is cut, and the modal says so."""
    sections: list[SectionBlock] = []
    rest = question
    while rest and len(sections) < QUESTION_SECTIONS:
        cut = split_point(rest, SECTION_LIMIT)
        sections.append(SectionBlock(text=PlainTextObject(text=rest[:cut], emoji=False)))
        rest = rest[cut:]
    asks = tr.gettext("*{tool} asks:* {question}", tool=f"`{escape(tool_name[:100])}`", question="")
    blocks: list[Any] = [ContextBlock(elements=[MarkdownTextObject(text=asks)]), *sections]
    if rest:
        note = tr.gettext(
            ":scissors: Cut here: {count} more characters are not shown (more than a Slack view holds).",
            count=f"{len(rest):,}",
        )
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=note)]))
    return View(type="modal", title=tr.gettext("The whole question"), close=tr.gettext("Close"), blocks=blocks)


def build_answer_modal(
    target: ModalTarget, suspend_payload: Any, resume_schema: dict[str, Any], tr: Translator
) -> View:
    """The tool's question (cut to what a section takes, saying so) and a form generated from its resume schema."""
    whole = question_of(suspend_payload)
    question, kept = escape_within(whole, SECTION_LIMIT - 200)
    if kept < len(whole):
        question += " " + cut_note(len(whole) - kept, tr)
    return View(
        type="modal",
        callback_id=ANSWER_CALLBACK,
        private_metadata=target.ref,
        title=tr.gettext("Answer"),
        submit=tr.gettext("Send"),
        close=tr.gettext("Cancel"),
        blocks=[SectionBlock(text=MarkdownTextObject(text=question)), *build_form_blocks(resume_schema, tr)],
    )


def read_reason(state_values: dict[str, Any]) -> str | None:
    reason = ((state_values.get(REASON_BLOCK_ID) or {}).get(REASON_ACTION) or {}).get("value")
    return reason.strip() if reason and reason.strip() else None
