"""Block Kit modals: decline with a reason, edit a call's arguments, answer a tool's question.

Each modal carries the clicked message's opaque reference in `private_metadata`; the submission
handler trusts nothing in it until the reference is checked again. Pure functions.
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


def build_decline_reason_modal(target: ModalTarget, args: Any) -> View:
    """Ask why the call is declined; the reason goes to the model and onto the message."""
    return View(
        type="modal",
        callback_id=DECLINE_REASON_CALLBACK,
        private_metadata=target.ref,
        title="Decline",
        submit="Decline",
        close="Cancel",
        blocks=[
            SectionBlock(text=MarkdownTextObject(text=f"Decline `{escape(target.tool_name)}` with:")),
            SectionBlock(text=MarkdownTextObject(text=format_args(args, limit=1500))),
            InputBlock(
                block_id=REASON_BLOCK_ID,
                label="Reason",
                element=PlainTextInputElement(action_id=REASON_ACTION, multiline=True, max_length=1000),
            ),
        ],
    )


def build_edit_args_modal(target: ModalTarget, input_schema: dict[str, Any], args: Any) -> View:
    """The call's arguments as a form generated from the tool's input schema; submitting approves them."""
    return View(
        type="modal",
        callback_id=EDIT_ARGS_CALLBACK,
        private_metadata=target.ref,
        title="Edit and approve",
        submit="Approve",
        close="Cancel",
        blocks=[
            SectionBlock(
                text=MarkdownTextObject(
                    text=f"Change the arguments of `{escape(target.tool_name)}`, then approve the edited call."
                )
            ),
            *build_form_blocks(input_schema, args),
        ],
    )


def build_answer_modal(target: ModalTarget, suspend_payload: Any, resume_schema: dict[str, Any]) -> View:
    """The tool's question and a form generated from its resume schema."""
    question = escape(question_of(suspend_payload)[:2900])
    return View(
        type="modal",
        callback_id=ANSWER_CALLBACK,
        private_metadata=target.ref,
        title="Answer",
        submit="Send",
        close="Cancel",
        blocks=[SectionBlock(text=MarkdownTextObject(text=question)), *build_form_blocks(resume_schema)],
    )


def read_reason(state_values: dict[str, Any]) -> str | None:
    reason = ((state_values.get(REASON_BLOCK_ID) or {}).get(REASON_ACTION) or {}).get("value")
    return reason.strip() if reason and reason.strip() else None
