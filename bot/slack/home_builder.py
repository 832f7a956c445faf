"""Block Kit for the App Home tab and the policy modal. Pure functions over small dataclasses.

The Home shows a user the approvals waiting for their decision (with the thread's own buttons, which
act exactly as they do there), their own requests still waiting, and, for an admin, every tool with
its policy and an Edit button that opens the policy modal.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    CheckboxesElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    InputBlock,
    MarkdownTextObject,
    Option,
    PlainTextInputElement,
    SectionBlock,
    StaticSelectElement,
)
from slack_sdk.models.views import View

from memory import PolicyMode, ToolPolicy
from tools import JsonValueError, read_json

from .approval_builder import APPROVE, DECLINE, DECLINE_WITH_REASON, EDIT_ARGS, format_args, slack_date
from .modal_builder import REASON_ACTION, REASON_BLOCK_ID
from .mrkdwn import escape
from .stores.answer_feedback import NO_TOOL, ToolFeedback

EDIT_POLICY = "policy_edit"
REVOKE_GRANT = "grant_revoke"
"""The Revoke button next to a standing grant (its value: the grant's id)."""
POLICY_CALLBACK = "policy_modal"
MODE_BLOCK, APPROVERS_BLOCK, SELF_APPROVAL_BLOCK, EXPIRY_BLOCK, APPROVALS_BLOCK, GRANTS_BLOCK = (
    "policy_mode",
    "policy_approvers",
    "policy_self_approval",
    "policy_expiry",
    "policy_approvals_required",
    "policy_grant_seconds",
)
ESCALATE_TO_BLOCK, ESCALATE_AFTER_BLOCK = "policy_escalate_to", "policy_escalate_after"
MODE_LABELS = {
    PolicyMode.INHERIT: "As the code says",
    PolicyMode.REQUIRE_APPROVAL: "Always ask for approval",
    PolicyMode.DISABLED: "Disabled: never run",
}
HOME_LIMIT = 15
"""Approvals shown per section (a Home view holds at most 100 blocks)."""
BULK_PICK = "home_bulk_pick"
"""The checkbox next to each approval waiting for you: its option's value is `bulk_value(ref, fingerprint)`."""
BULK_APPROVE, BULK_DECLINE = "home_bulk_approve", "home_bulk_decline"
"""The "Approve selected" and "Decline selected" buttons under the waiting list."""
BULK_DECLINE_WITH_REASON = "home_bulk_decline_with_reason"
"""The "Decline selected with reason" button: a modal asks one (optional) reason for all of them."""
BULK_DECLINE_REASON_CALLBACK = "home_bulk_decline_reason"
"""The modal "Decline selected" opens for an optional reason (its private_metadata: the selection)."""
BULK_RESULT_BLOCK = "home_bulk_result"


@dataclass(frozen=True, kw_only=True)
class HomeApproval:
    """An approval as the Home lists it."""

    ref: str
    """The reference the thread's buttons carry."""
    tool_name: str
    args: Any
    requester: str
    channel: str
    waiting_since: Any = None
    may_decide: bool = True
    """False: listed without buttons (e.g. your own request when self-approval is refused)."""
    note: str = ""
    fingerprint: str | None = None
    """The fingerprint of the call as shown; a bulk selection carries it, so that it decides only this."""
    approvals: tuple[str, ...] = ()
    """Four eyes: who approved it so far."""
    approvals_required: int = 1


@dataclass(frozen=True, kw_only=True)
class HomePolicy:
    policy: ToolPolicy
    code: str
    """What the code says: `always`, `sometimes`, `never`, `unknown`."""


@dataclass(frozen=True, kw_only=True)
class HomeGrant:
    """A live standing grant as the Home lists it (an admin sees every one, a granter their own)."""

    id: str
    tool_name: str
    granted_by: str
    same_arguments: bool
    expires_at: datetime
    channel: str | None = None
    """The channel of the thread it covers, when known."""


@dataclass(frozen=True, kw_only=True)
class HomeView:
    user_id: str
    waiting_for_you: list[HomeApproval]
    your_requests: list[HomeApproval]
    grants: list[HomeGrant] = field(default_factory=list)
    """The live standing grants this user may see and revoke."""
    policies: list[HomePolicy] | None = None
    """None: not an admin (no policy section)."""
    feedback: list[ToolFeedback] | None = None
    """People's ratings of the answers, per tool they used; None: not an admin (no feedback section)."""
    bulk_result: str | None = None
    """What the user's last "Approve selected" / "Decline selected" did, shown at the top (mrkdwn)."""


def bulk_value(ref: str, fingerprint: str | None) -> str:
    """A bulk checkbox's option value: the message reference and the fingerprint the user was shown."""
    return f"{ref}:{fingerprint or ''}"


def read_bulk_value(value: str) -> tuple[str, str]:
    """(ref, fingerprint) of a bulk checkbox's value (the fingerprint "" for a call shown without one)."""
    ref, _, fingerprint = value.rpartition(":")
    return ref, fingerprint


def build_home_view(home: HomeView) -> dict[str, Any]:
    blocks: list[Block] = [HeaderBlock(text="Approvals")]
    if home.bulk_result:
        blocks.append(SectionBlock(block_id=BULK_RESULT_BLOCK, text=MarkdownTextObject(text=home.bulk_result[:3000])))
    blocks += _approvals(
        "*Waiting for your decision*", home.waiting_for_you, empty="Nothing is waiting for your decision.", pick=True
    )
    if any(approval.may_decide for approval in home.waiting_for_you[:HOME_LIMIT]):
        blocks.append(
            ActionsBlock(
                block_id="home_bulk",
                elements=[
                    ButtonElement(text="Approve selected", action_id=BULK_APPROVE, value="approve", style="primary"),
                    ButtonElement(text="Decline selected", action_id=BULK_DECLINE, value="decline", style="danger"),
                    ButtonElement(
                        text="Decline selected with reason", action_id=BULK_DECLINE_WITH_REASON, value="decline"
                    ),
                ],
            )
        )
        blocks.append(
            ContextBlock(
                elements=[
                    MarkdownTextObject(
                        text="Tick requests, then approve or decline them at once: each is decided as if "
                        "clicked alone (its own policy check), and this page says what happened to each."
                    )
                ]
            )
        )
    blocks.append(DividerBlock())
    blocks += _approvals("*Your requests still waiting*", home.your_requests, empty="None of your requests waits.")
    if home.grants:
        blocks.append(DividerBlock())
        blocks += grants_section(home.grants)
    if home.policies is not None:
        blocks.append(DividerBlock())
        blocks.append(HeaderBlock(text="Tool policies"))
        blocks.append(
            ContextBlock(elements=[MarkdownTextObject(text="You are an admin: you can change who approves each tool.")])
        )
        for item in home.policies:
            blocks.append(
                SectionBlock(
                    block_id=f"policy_{item.policy.tool_name}"[:255],
                    text=MarkdownTextObject(text=policy_text(item)),
                    accessory=ButtonElement(text="Edit", action_id=EDIT_POLICY, value=item.policy.tool_name),
                )
            )
    if home.feedback is not None:
        blocks += feedback_section(home.feedback)
    return View(type="home", blocks=blocks[:100]).to_dict()


def grants_section(grants: list[HomeGrant]) -> list[Block]:
    """The live standing grants, each with a Revoke button (it ends the grant for the very next call)."""
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text="*Standing grants*"))]
    for grant in grants[:HOME_LIMIT]:
        where = f" in a thread of <#{grant.channel}>" if grant.channel else " in one thread"
        scope = "these arguments only" if grant.same_arguments else "any arguments"
        text = (
            f"`{escape(grant.tool_name)}` runs without asking{where} ({scope}), allowed by <@{grant.granted_by}>, "
            f"until {slack_date(grant.expires_at)}"
        )
        blocks.append(
            SectionBlock(
                block_id=f"grant_{grant.id}"[:255],
                text=MarkdownTextObject(text=text),
                accessory=ButtonElement(text="Revoke", action_id=REVOKE_GRANT, value=grant.id, style="danger"),
            )
        )
    if len(grants) > HOME_LIMIT:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=f"…and {len(grants) - HOME_LIMIT} more.")]))
    return blocks


FEEDBACK_LIMIT = 20
"""Tools listed in the feedback section."""


def feedback_section(feedback: list[ToolFeedback]) -> list[Block]:
    """An admin's view of the ratings: per tool, how many answers that used it got 👍 and 👎."""
    blocks: list[Block] = [DividerBlock(), HeaderBlock(text="Feedback on answers")]
    if not feedback:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text="No answer has been rated yet.")]))
        return blocks
    lines = [
        f"{'`' + escape(item.tool_name) + '`' if item.tool_name != NO_TOOL else '_answers without a tool_'}: "
        f"👍 {item.up} · 👎 {item.down}"
        for item in feedback[:FEEDBACK_LIMIT]
    ]
    if len(feedback) > FEEDBACK_LIMIT:
        lines.append(f"…and {len(feedback) - FEEDBACK_LIMIT} more tools.")
    blocks.append(SectionBlock(block_id="feedback_per_tool", text=MarkdownTextObject(text="\n".join(lines))))
    blocks.append(
        ContextBlock(elements=[MarkdownTextObject(text="An answer that used several tools counts for each of them.")])
    )
    return blocks


def policy_text(item: HomePolicy) -> str:
    policy = item.policy
    approvers = ", ".join(_mention(a) for a in policy.approvers) or "anyone in the conversation"
    code = what_happens(item)
    lines = [
        f"*`{escape(policy.tool_name)}`*  ({code})",
        f"Mode: {MODE_LABELS[policy.mode]} · Approvers: {approvers}",
        f"Self-approval: {'allowed' if policy.self_approval else 'refused'} · "
        f"Expires: {f'after {policy.expires_after} s' if policy.expires_after else 'never'} · v{policy.version}",
    ]
    if policy.approvals_required > 1:
        lines.append(f"Approvals required: {policy.approvals_required} different people (not the requester)")
    if policy.grant_seconds:
        note = "" if policy.allows_grants else " (not offered while several approvals are required)"
        lines.append(f"Standing grants: up to {policy.grant_seconds} s in one thread{note}")
    if policy.escalates:
        target = (
            f"<!subteam^{policy.escalate_to}>"
            if (policy.escalate_to or "").startswith("S")
            else f"<#{policy.escalate_to}>"
        )
        lines.append(f"Escalates to {target} after {policy.escalate_after} s without a decision")
    return "\n".join(lines)


def what_happens(item: HomePolicy) -> str:
    """What happens to the tool's calls now, policy and code together (not the code alone: a disabled
    tool that "always asks" never runs)."""
    if item.code == "unknown":
        return "not a tool of this agent"
    if item.policy.disabled:
        return "never runs: disabled"
    if item.policy.adds_approval:
        return "always asks: the policy says so"
    return {"always": "always asks", "sometimes": "asks for some calls", "never": "does not ask"}.get(
        item.code, "not a tool of this agent"
    )


def _approvals(title: str, approvals: list[HomeApproval], *, empty: str, pick: bool = False) -> list[Block]:
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=title))]
    if not approvals:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=empty)]))
        return blocks
    for approval in approvals[:HOME_LIMIT]:
        line = (
            f"`{escape(approval.tool_name)}` requested by <@{approval.requester}> in <#{approval.channel}>, "
            f"waiting since {slack_date(approval.waiting_since)}"
        )
        if approval.note:
            line += f"\n_{escape(approval.note)}_"
        if approval.approvals_required > 1:
            line += "\n" + approvals_so_far(approval)
        text = MarkdownTextObject(text=line + "\n" + format_args(approval.args, limit=600))
        if pick and approval.may_decide:
            select = Option(value=bulk_value(approval.ref, approval.fingerprint), text="Select")
            blocks.append(
                SectionBlock(
                    block_id=f"home_pick_{approval.ref}"[:255],
                    text=text,
                    accessory=CheckboxesElement(action_id=BULK_PICK, options=[select]),
                )
            )
        else:
            blocks.append(SectionBlock(text=text))
        if approval.may_decide:
            blocks.append(
                ActionsBlock(
                    block_id=f"home_call_{approval.ref}"[:255],
                    elements=[
                        ButtonElement(text="Approve", action_id=APPROVE, value=approval.ref, style="primary"),
                        ButtonElement(text="Decline", action_id=DECLINE, value=approval.ref, style="danger"),
                        ButtonElement(text="Decline with reason", action_id=DECLINE_WITH_REASON, value=approval.ref),
                        ButtonElement(text="Edit arguments", action_id=EDIT_ARGS, value=approval.ref),
                    ],
                )
            )
    if len(approvals) > HOME_LIMIT:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=f"…and {len(approvals) - HOME_LIMIT} more.")]))
    return blocks


def approvals_so_far(approval: HomeApproval) -> str:
    """Four eyes, as the thread's message says it: "1 of 2 approvals: <@U2>"."""
    line = f":busts_in_silhouette: {len(approval.approvals)} of {approval.approvals_required} approvals"
    return line + (": " + ", ".join(f"<@{user}>" for user in approval.approvals) if approval.approvals else "")


def _mention(approver: str) -> str:
    return f"<!subteam^{approver}>" if approver.startswith("S") else f"<@{approver}>"


def build_bulk_decline_modal(selected: list[str]) -> dict[str, Any]:
    """The modal "Decline selected with reason" opens: one optional reason for every selected approval;
    `private_metadata` is the selection (JSON), checked again item by item when it is submitted."""
    kept: list[str] = []
    for value in selected:  # private_metadata holds at most 3000 characters
        if len(json.dumps([*kept, value])) > 3000:
            break
        kept.append(value)
    count = f"{len(kept)} request{'s' if len(kept) != 1 else ''}"
    return View(
        type="modal",
        callback_id=BULK_DECLINE_REASON_CALLBACK,
        private_metadata=json.dumps(kept),
        title="Decline selected",
        submit="Decline",
        close="Cancel",
        blocks=[
            SectionBlock(
                text=MarkdownTextObject(text=f"Decline the {count} you selected; the model reads the reason.")
            ),
            InputBlock(
                block_id=REASON_BLOCK_ID,
                label="Reason",
                optional=True,
                element=PlainTextInputElement(action_id=REASON_ACTION, multiline=True, max_length=1000),
            ),
        ],
    ).to_dict()


def read_bulk_decline_modal(private_metadata: str | None) -> list[str]:
    """The selection a submitted "Decline selected with reason" modal carries ([] if it is not one)."""
    try:  # what the modal was opened with, or a forged one: nesting bounded
        selected = read_json(private_metadata or "[]")
    except JsonValueError:
        return []
    return [v for v in selected if isinstance(v, str)] if isinstance(selected, list) else []


def build_policy_modal(policy: ToolPolicy) -> dict[str, Any]:
    """The modal an admin edits one tool's policy in; `private_metadata` is the tool's name."""
    modes = [Option(value=str(mode), text=label) for mode, label in MODE_LABELS.items()]
    self_option = Option(value="allowed", text="The requester may approve their own call")
    blocks: list[Block] = [
        InputBlock(
            block_id=MODE_BLOCK,
            label="Mode",
            element=StaticSelectElement(
                action_id="value",
                options=modes,
                initial_option=next(o for o in modes if o.value == str(policy.mode)),
            ),
        ),
        InputBlock(
            block_id=APPROVERS_BLOCK,
            label="Approvers",
            optional=True,
            hint="Slack user IDs (U…) and user-group IDs (S…), separated by commas. Empty: anyone in the conversation.",
            element=PlainTextInputElement(action_id="value", initial_value=",".join(policy.approvers) or None),
        ),
        InputBlock(
            block_id=SELF_APPROVAL_BLOCK,
            label="Self-approval",
            optional=True,
            element=CheckboxesElement(
                action_id="value",
                options=[self_option],
                initial_options=[self_option] if policy.self_approval else None,
            ),
        ),
        InputBlock(
            block_id=EXPIRY_BLOCK,
            label="Expiry (seconds)",
            optional=True,
            hint="A waiting approval is declined as expired after this long. Empty or 0: never.",
            element=PlainTextInputElement(
                action_id="value", initial_value=str(policy.expires_after) if policy.expires_after else None
            ),
        ),
        InputBlock(
            block_id=APPROVALS_BLOCK,
            label="Approvals required",
            optional=True,
            hint="Distinct people who must approve a call before it runs (2: four eyes); the requester never "
            "counts. Empty or 1: one approval.",
            element=PlainTextInputElement(action_id="value", initial_value=str(policy.approvals_required)),
        ),
        InputBlock(
            block_id=GRANTS_BLOCK,
            label="Standing grants (seconds)",
            optional=True,
            hint="The longest an approver may allow this tool in one thread without asking again (3600: "
            '"Approve and allow for 1 hour in this thread"); 60 to 604800. Empty or 0: no grants. '
            "Never offered while several approvals are required.",
            element=PlainTextInputElement(
                action_id="value", initial_value=str(policy.grant_seconds) if policy.grant_seconds else None
            ),
        ),
        InputBlock(
            block_id=ESCALATE_TO_BLOCK,
            label="Escalate to",
            optional=True,
            hint="A user-group ID (S…: a DM to each member) or channel ID (C…: one post) that an approval still "
            "waiting after the delay below is brought to, with the same buttons. Empty: no escalation.",
            element=PlainTextInputElement(action_id="value", initial_value=policy.escalate_to or None),
        ),
        InputBlock(
            block_id=ESCALATE_AFTER_BLOCK,
            label="Escalate after (seconds)",
            optional=True,
            hint="Seconds without a decision before it is escalated; shorter than the expiry. Empty or 0: never.",
            element=PlainTextInputElement(
                action_id="value", initial_value=str(policy.escalate_after) if policy.escalate_after else None
            ),
        ),
    ]
    return View(
        type="modal",
        callback_id=POLICY_CALLBACK,
        private_metadata=policy.tool_name,
        title=f"Policy: {policy.tool_name}"[:24],
        submit="Save",
        close="Cancel",
        blocks=blocks,
    ).to_dict()


def read_policy_modal(values: dict[str, Any]) -> dict[str, Any]:
    """The submitted modal's fields: mode, approvers (list), self_approval (bool), expiry (text)."""

    def field(block: str) -> dict[str, Any]:
        return (values.get(block) or {}).get("value") or {}

    mode = (field(MODE_BLOCK).get("selected_option") or {}).get("value")
    approvers_text = field(APPROVERS_BLOCK).get("value") or ""
    checked = field(SELF_APPROVAL_BLOCK).get("selected_options") or []
    return {
        "mode": mode,
        "approvers": [part.strip() for part in approvers_text.replace("\n", ",").split(",") if part.strip()],
        "self_approval": any(option.get("value") == "allowed" for option in checked),
        "expiry": (field(EXPIRY_BLOCK).get("value") or "").strip(),
        "approvals_required": (field(APPROVALS_BLOCK).get("value") or "").strip(),
        "grant_seconds": (field(GRANTS_BLOCK).get("value") or "").strip(),
        "escalate_to": (field(ESCALATE_TO_BLOCK).get("value") or "").strip(),
        "escalate_after": (field(ESCALATE_AFTER_BLOCK).get("value") or "").strip(),
    }
