"""Block actions: the approval buttons and the Answer button of a question."""

from slack_bolt.async_app import AsyncApp

from ...approval_builder import APPROVE, DECLINE, DECLINE_WITH_REASON, EDIT_ARGS
from ...question_builder import ANSWER
from .answer import handle_answer_button
from .approve import handle_approve_button
from .decline import handle_decline_button, handle_decline_with_reason_button
from .edit_args import handle_edit_args_button


def register(app: AsyncApp) -> None:
    app.action(APPROVE)(handle_approve_button)
    app.action(DECLINE)(handle_decline_button)
    app.action(DECLINE_WITH_REASON)(handle_decline_with_reason_button)
    app.action(EDIT_ARGS)(handle_edit_args_button)
    app.action(ANSWER)(handle_answer_button)
