"""View submissions: the decline-reason, edit-arguments and answer modals, the policy modal, and the
Home's "Decline selected with reason" modal, and the delegation form."""

from slack_bolt.async_app import AsyncApp

from ...delegation_builder import DELEGATION_CALLBACK
from ...home_builder import BULK_DECLINE_REASON_CALLBACK, POLICY_CALLBACK
from ...modal_builder import ANSWER_CALLBACK, DECLINE_REASON_CALLBACK, EDIT_ARGS_CALLBACK
from .answer import handle_answer_submission
from .bulk_decline import handle_bulk_decline_reason_submission
from .decline_reason import handle_decline_reason_submission
from .delegation import handle_delegation_submission
from .edit_args import handle_edit_args_submission
from .policy import handle_policy_submission


def register(app: AsyncApp) -> None:
    app.view(DECLINE_REASON_CALLBACK)(handle_decline_reason_submission)
    app.view(EDIT_ARGS_CALLBACK)(handle_edit_args_submission)
    app.view(ANSWER_CALLBACK)(handle_answer_submission)
    app.view(POLICY_CALLBACK)(handle_policy_submission)
    app.view(BULK_DECLINE_REASON_CALLBACK)(handle_bulk_decline_reason_submission)
    app.view(DELEGATION_CALLBACK)(handle_delegation_submission)
