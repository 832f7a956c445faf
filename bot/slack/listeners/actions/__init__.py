"""Block actions: the approval buttons (Cancel among them) (in a thread or the App Home), the Answer, Decline, Cancel and
"Show the whole question" buttons of a question, an admin's Edit button next to a tool policy, the feedback buttons under an
answer, the admin's Approval analytics button, the App Home's bulk decisions (its checkboxes, "Approve selected", "Decline selected") and the
Revoke button next to a standing grant in the App Home, and its delegation buttons (hand over, end)."""

from slack_bolt.async_app import AsyncApp

from ...analytics_builder import APPROVAL_ANALYTICS
from ...approval_builder import (
    APPROVE,
    APPROVE_AND_GRANT,
    APPROVE_AND_GRANT_SAME_ARGS,
    CANCEL,
    DECLINE,
    DECLINE_WITH_REASON,
    EDIT_ARGS,
)
from ...delegation_builder import END_DELEGATION, HAND_OVER
from ...feedback_builder import FEEDBACK
from ...home_builder import BULK_APPROVE, BULK_DECLINE, BULK_DECLINE_WITH_REASON, BULK_PICK, EDIT_POLICY, REVOKE_GRANT
from ...question_builder import ANSWER, CANCEL_QUESTION, DECLINE_QUESTION, OPEN_URL, SHOW_QUESTION
from ...undo import UNDO
from .analytics import handle_approval_analytics_button
from .answer import (
    handle_answer_button,
    handle_question_cancel_button,
    handle_question_decline_button,
    handle_question_url_button,
)
from .approve import (
    handle_approve_and_grant_button,
    handle_approve_and_grant_same_args_button,
    handle_approve_button,
)
from .bulk import (
    handle_bulk_approve_button,
    handle_bulk_decline_button,
    handle_bulk_decline_with_reason_button,
    handle_bulk_pick,
)
from .decline import handle_cancel_button, handle_decline_button, handle_decline_with_reason_button
from .delegation import handle_end_delegation_button, handle_hand_over_button
from .edit_args import handle_edit_args_button
from .feedback import handle_feedback_button
from .grant_revoke import handle_grant_revoke_button
from .policy_edit import handle_policy_edit_button
from .show_question import handle_show_question_button
from .undo import handle_undo_button


def register(app: AsyncApp) -> None:
    app.action(APPROVE)(handle_approve_button)
    app.action(APPROVE_AND_GRANT)(handle_approve_and_grant_button)
    app.action(APPROVE_AND_GRANT_SAME_ARGS)(handle_approve_and_grant_same_args_button)
    app.action(DECLINE)(handle_decline_button)
    app.action(DECLINE_WITH_REASON)(handle_decline_with_reason_button)
    app.action(CANCEL)(handle_cancel_button)
    app.action(UNDO)(handle_undo_button)
    app.action(EDIT_ARGS)(handle_edit_args_button)
    app.action(ANSWER)(handle_answer_button)
    app.action(DECLINE_QUESTION)(handle_question_decline_button)
    app.action(CANCEL_QUESTION)(handle_question_cancel_button)
    app.action(OPEN_URL)(handle_question_url_button)
    app.action(SHOW_QUESTION)(handle_show_question_button)
    app.action(EDIT_POLICY)(handle_policy_edit_button)
    app.action(APPROVAL_ANALYTICS)(handle_approval_analytics_button)
    app.action(REVOKE_GRANT)(handle_grant_revoke_button)
    app.action(FEEDBACK)(handle_feedback_button)
    app.action(HAND_OVER)(handle_hand_over_button)
    app.action(END_DELEGATION)(handle_end_delegation_button)
    app.action(BULK_PICK)(handle_bulk_pick)
    app.action(BULK_APPROVE)(handle_bulk_approve_button)
    app.action(BULK_DECLINE)(handle_bulk_decline_button)
    app.action(BULK_DECLINE_WITH_REASON)(handle_bulk_decline_with_reason_button)
