"""Block Kit modals: decline with a reason, edit a call's arguments, answer a tool's question.

Each modal carries the clicked message's opaque reference in `private_metadata`; the submission
handler trusts nothing in it until the reference is checked again. Pure functions of what the modal shows and
the reader's `Translator` (a modal is seen by the one person who opened it: in their language).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from slack_sdk.models.blocks import InputBlock, MarkdownTextObject, PlainTextInputElement, SectionBlock
from slack_sdk.models.views import View

from .approval_builder import format_args
from .form_builder import build_form_blocks
from .mrkdwn import escape
from .question_builder import question_of
from .translator import Translator

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
            SectionBlock(text=MarkdownTextObject(text=format_args(args, limit=1500))),
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


def build_answer_modal(
    target: ModalTarget, suspend_payload: Any, resume_schema: dict[str, Any], tr: Translator
) -> View:
    """The tool's question and a form generated from its resume schema."""
    question = escape(question_of(suspend_payload)[:2900])
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
