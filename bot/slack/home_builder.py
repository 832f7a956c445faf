"""Block Kit for the App Home tab and the policy modal. Pure functions of small dataclasses and the reader's
`Translator` (a Home and a modal are seen by their one person: in that person's language).

The Home shows a user the approvals waiting for their decision (with the thread's own buttons, which
act exactly as they do there), their own requests still waiting, and, for an admin, every tool with
its policy and an Edit button that opens the policy modal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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

from bot.admin import rule_words
from memory import PolicyMode, ToolPolicy
from tools import JsonValueError, read_json

from .analytics_builder import analytics_button
from .approval_builder import (
    APPROVE,
    APPROVE_AND_GRANT,
    APPROVE_AND_GRANT_SAME_ARGS,
    CANCEL,
    DECLINE,
    DECLINE_WITH_REASON,
    EDIT_ARGS,
    PreviewView,
    date_or_now,
    duration_words,
    format_args,
    person_words,
    preview_section,
)
from .delegation_builder import HomeDelegation, delegation_section
from .modal_builder import REASON_ACTION, REASON_BLOCK_ID
from .mrkdwn import escape, slack_date
from .rules_builder import call_rule_line, rules_lines
from .stores.answer_feedback import NO_TOOL, ToolFeedback
from .translator import N_, Translator

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
UNDO_BLOCK = "policy_undo_seconds"
RULES_BLOCK = "policy_rules"
MODE_LABELS = {
    PolicyMode.INHERIT: N_("As the code says"),
    PolicyMode.REQUIRE_APPROVAL: N_("Always ask for approval"),
    PolicyMode.DISABLED: N_("Disabled: never run"),
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
    stood_in_for: tuple[tuple[str, str], ...] = ()
    """(delegate, delegator) of each approval made standing in for someone."""
    approvals_required: int = 1
    rule: str | None = None
    """The admin's rule that made it wait ("rule 1: Needs finance: ..."); None: no rule."""
    rule_fields: Mapping[str, Any] | None = None
    """The same rule as stored, worded in the reader's language (`rule` is shown when it is None)."""
    actions: frozenset[str] = frozenset({"approve", "decline", "edit_args"})
    """What the rule lets the viewer do (`bot.agent.Action` values): the card offers only these."""
    preview: PreviewView | None = None
    """What the tool's dry run said, as the thread's message shows it."""
    who_may_approve: str = ""
    """Who may decide it (mrkdwn, in the reader's words), as the thread's message says; empty: not said."""
    expires_at: datetime | None = None
    """When it is declined as expired (None: never)."""
    grant_seconds: int | None = None
    """The standing grant on offer (None: none), offered by two buttons as in the thread."""


@dataclass(frozen=True, kw_only=True)
class HomePolicy:
    policy: ToolPolicy
    code: str
    """What the code says: `always`, `sometimes`, `never`, `unknown`."""
    trials: dict[int, dict[str, int]] = field(default_factory=dict)
    """Per trial rule (its position), how many calls it would have changed, per `would_*` audit action."""


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
    delegations: list[HomeDelegation] = field(default_factory=list)
    """The delegations in force this user gave or holds."""
    every_delegation: list[HomeDelegation] | None = None
    """Every delegation in force, for an admin; None: not an admin."""
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


def build_home_view(home: HomeView, tr: Translator) -> dict[str, Any]:
    blocks: list[Block] = [HeaderBlock(text=tr.gettext("Approvals"))]
    if home.bulk_result:
        blocks.append(SectionBlock(block_id=BULK_RESULT_BLOCK, text=MarkdownTextObject(text=home.bulk_result[:3000])))
    blocks += _approvals(
        tr.gettext("*Waiting for your decision*"),
        home.waiting_for_you,
        tr,
        empty=tr.gettext("Nothing is waiting for your decision."),
        pick=True,
    )
    if any(approval.may_decide for approval in home.waiting_for_you[:HOME_LIMIT]):
        # set apart from the last card's own buttons, so "Approve selected" is never read as one of them
        blocks.append(DividerBlock())
        blocks.append(SectionBlock(text=MarkdownTextObject(text=tr.gettext("*The requests you ticked*"))))
        approve, decline = tr.gettext("Approve selected"), tr.gettext("Decline selected")
        with_reason = tr.gettext("Decline selected with reason")
        blocks.append(
            ActionsBlock(
                block_id="home_bulk",
                elements=[
                    ButtonElement(text=approve, action_id=BULK_APPROVE, value="approve", style="primary"),
                    ButtonElement(text=decline, action_id=BULK_DECLINE, value="decline", style="danger"),
                    ButtonElement(text=with_reason, action_id=BULK_DECLINE_WITH_REASON, value="decline"),
                ],
            )
        )
        how = tr.gettext(
            "Tick requests, then approve or decline them at once: each is decided as if clicked alone (its own "
            "policy check), and this page says what happened to each."
        )
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=how)]))
    blocks.append(DividerBlock())
    blocks += _approvals(
        tr.gettext("*Your requests still waiting*"),
        home.your_requests,
        tr,
        empty=tr.gettext("None of your requests waits."),
    )
    if home.grants:
        blocks.append(DividerBlock())
        blocks += grants_section(home.grants, tr)
    blocks += delegation_section(home.user_id, home.delegations, home.every_delegation, tr)
    if home.policies is not None:
        blocks.append(DividerBlock())
        blocks.append(HeaderBlock(text=tr.gettext("Tool policies")))
        admin = tr.gettext("You are an admin: you can change who approves each tool.")
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=admin)]))
        blocks.append(analytics_button(tr))
        for item in home.policies:
            blocks.append(
                SectionBlock(
                    block_id=f"policy_{item.policy.tool_name}"[:255],
                    text=MarkdownTextObject(text=policy_text(item, tr)),
                    accessory=ButtonElement(
                        text=tr.gettext("Edit"), action_id=EDIT_POLICY, value=item.policy.tool_name
                    ),
                )
            )
    if home.feedback is not None:
        blocks += feedback_section(home.feedback, tr)
    return View(type="home", blocks=blocks[:100]).to_dict()


def grants_section(grants: list[HomeGrant], tr: Translator) -> list[Block]:
    """The live standing grants, each with a Revoke button (it ends the grant for the very next call)."""
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=tr.gettext("*Standing grants*")))]
    for grant in grants[:HOME_LIMIT]:
        values = {
            "tool": f"`{escape(grant.tool_name)}`",
            "channel": f"<#{grant.channel}>",
            "user": f"<@{grant.granted_by}>",
            "date": slack_date(grant.expires_at),
        }
        if grant.channel and grant.same_arguments:
            text = tr.gettext(
                "{tool} runs without asking in a thread of {channel} (these arguments only), allowed by {user}, "
                "until {date}",
                **values,
            )
        elif grant.channel:
            text = tr.gettext(
                "{tool} runs without asking in a thread of {channel} (any arguments), allowed by {user}, until {date}",
                **values,
            )
        elif grant.same_arguments:
            text = tr.gettext(
                "{tool} runs without asking in one thread (these arguments only), allowed by {user}, until {date}",
                **values,
            )
        else:
            text = tr.gettext(
                "{tool} runs without asking in one thread (any arguments), allowed by {user}, until {date}", **values
            )
        blocks.append(
            SectionBlock(
                block_id=f"grant_{grant.id}"[:255],
                text=MarkdownTextObject(text=text),
                accessory=ButtonElement(
                    text=tr.gettext("Revoke"), action_id=REVOKE_GRANT, value=grant.id, style="danger"
                ),
            )
        )
    if len(grants) > HOME_LIMIT:
        more = tr.ngettext("…and {n} more.", "…and {n} more.", len(grants) - HOME_LIMIT)
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=more)]))
    return blocks


FEEDBACK_LIMIT = 20
"""Tools listed in the feedback section."""


def feedback_section(feedback: list[ToolFeedback], tr: Translator) -> list[Block]:
    """An admin's view of the ratings: per tool, how many answers that used it got 👍 and 👎."""
    blocks: list[Block] = [DividerBlock(), HeaderBlock(text=tr.gettext("Feedback on answers"))]
    if not feedback:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=tr.gettext("No answer has been rated yet."))]))
        return blocks
    without_tool = "_" + tr.gettext("answers without a tool") + "_"
    lines = [
        f"{'`' + escape(item.tool_name) + '`' if item.tool_name != NO_TOOL else without_tool}: "
        f"👍 {item.up} · 👎 {item.down}"
        for item in feedback[:FEEDBACK_LIMIT]
    ]
    if len(feedback) > FEEDBACK_LIMIT:
        lines.append(tr.ngettext("…and {n} more tool.", "…and {n} more tools.", len(feedback) - FEEDBACK_LIMIT))
    blocks.append(SectionBlock(block_id="feedback_per_tool", text=MarkdownTextObject(text="\n".join(lines))))
    several = tr.gettext("An answer that used several tools counts for each of them.")
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=several)]))
    return blocks


def policy_text(item: HomePolicy, tr: Translator) -> str:
    policy = item.policy
    approvers = ", ".join(_mention(a) for a in policy.approvers) or tr.gettext("anyone in the conversation")
    mode = tr.gettext(MODE_LABELS[policy.mode])
    self_approval = tr.gettext("allowed") if policy.self_approval else tr.gettext("refused")
    if policy.expires_after:
        expires = tr.gettext("after {seconds} s", seconds=policy.expires_after)
    else:
        expires = tr.gettext("never")
    lines = [
        f"*`{escape(policy.tool_name)}`*  ({what_happens(item, tr)})",
        tr.gettext("Mode: {mode} · Approvers: {approvers}", mode=mode, approvers=approvers),
        tr.gettext(
            "Self-approval: {self_approval} · Expires: {expires} · v{version}",
            self_approval=self_approval,
            expires=expires,
            version=policy.version,
        ),
    ]
    if policy.approvals_required > 1:
        lines.append(
            tr.gettext("Approvals required: {n} different people (not the requester)", n=policy.approvals_required)
        )
    if policy.grant_seconds and policy.allows_grants:
        lines.append(tr.gettext("Standing grants: up to {seconds} s in one thread", seconds=policy.grant_seconds))
    elif policy.grant_seconds:
        lines.append(
            tr.gettext(
                "Standing grants: up to {seconds} s in one thread (not offered while several approvals are required)",
                seconds=policy.grant_seconds,
            )
        )
    if policy.escalates:
        target = (
            f"<!subteam^{policy.escalate_to}>"
            if (policy.escalate_to or "").startswith("S")
            else f"<#{policy.escalate_to}>"
        )
        lines.append(
            tr.gettext(
                "Escalates to {target} after {seconds} s without a decision",
                target=target,
                seconds=policy.escalate_after,
            )
        )
    lines += rules_lines(policy, item.trials, tr)
    return "\n".join(lines)


def what_happens(item: HomePolicy, tr: Translator) -> str:
    """What happens to the tool's calls now, policy and code together (not the code alone: a disabled
    tool that "always asks" never runs)."""
    if item.code == "unknown":
        return tr.gettext("not a tool of this agent")
    if item.policy.disabled:
        return tr.gettext("never runs: disabled")
    if item.policy.adds_approval:
        return tr.gettext("always asks: the policy says so")
    if item.code == "always":
        return tr.gettext("always asks")
    if item.code == "sometimes":
        return tr.gettext("asks for some calls")
    if item.code == "never":
        return tr.gettext("does not ask")
    return tr.gettext("not a tool of this agent")


def _approvals(
    title: str, approvals: list[HomeApproval], tr: Translator, *, empty: str, pick: bool = False
) -> list[Block]:
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=title))]
    if not approvals:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=empty)]))
        return blocks
    for index, approval in enumerate(approvals[:HOME_LIMIT]):
        if index and pick:
            blocks.append(DividerBlock())  # one card's buttons apart from the next card
        line = tr.gettext(
            "{tool} requested by {user} in {channel}, waiting since {date}",
            tool=f"`{escape(approval.tool_name)}`",
            user=f"<@{approval.requester}>",
            channel=f"<#{approval.channel}>",
            date=date_or_now(approval.waiting_since, tr),
        )
        if approval.note:
            line += f"\n_{escape(approval.note)}_"
        rule = (call_rule_line(approval.rule_fields, tr) if approval.rule_fields else None) or approval.rule
        if rule:
            line += f"\n:scroll: {escape(rule[:300])}"
        if approval.approvals_required > 1:
            line += "\n" + approvals_so_far(approval, tr)
        if approval.who_may_approve:  # who may decide and until when, as the thread's message says
            line += "\n" + tr.gettext("Who may approve: {who}", who=approval.who_may_approve) + " · "
            if approval.expires_at is not None:
                line += tr.gettext("Expires {date}", date=slack_date(approval.expires_at))
            else:
                line += tr.gettext("Does not expire")
        text = line + "\n" + format_args(approval.args, tr, limit=600)
        if approval.preview is not None:  # what the tool's dry run said, as the thread's message shows it
            text += "\n" + preview_section(approval.preview, tr)
        shown = MarkdownTextObject(text=text[:3000])
        if pick and approval.may_decide:
            select = Option(value=bulk_value(approval.ref, approval.fingerprint), text=tr.gettext("Select"))
            blocks.append(
                SectionBlock(
                    block_id=f"home_pick_{approval.ref}"[:255],
                    text=shown,
                    accessory=CheckboxesElement(action_id=BULK_PICK, options=[select]),
                )
            )
        else:
            blocks.append(SectionBlock(text=shown))
        elements: list[ButtonElement] = []
        if approval.may_decide:
            ref, offered = approval.ref, approval.actions
            if "approve" in offered:
                elements.append(
                    ButtonElement(text=tr.gettext("Approve"), action_id=APPROVE, value=ref, style="primary")
                )
            if "grant" in offered and approval.grant_seconds:  # the grant on offer, as in the thread
                lasting = duration_words(approval.grant_seconds, tr)
                in_thread = tr.gettext("Approve and allow for {time} in this thread", time=lasting)
                same_args = tr.gettext("Approve and allow these arguments for {time}", time=lasting)
                elements.append(ButtonElement(text=in_thread, action_id=APPROVE_AND_GRANT, value=ref))
                elements.append(ButtonElement(text=same_args, action_id=APPROVE_AND_GRANT_SAME_ARGS, value=ref))
            if "decline" in offered:
                elements.append(ButtonElement(text=tr.gettext("Decline"), action_id=DECLINE, value=ref, style="danger"))
                elements.append(
                    ButtonElement(text=tr.gettext("Decline with reason"), action_id=DECLINE_WITH_REASON, value=ref)
                )
            if "edit_args" in offered:  # never on a four-eyes call: everyone approves the same arguments
                elements.append(ButtonElement(text=tr.gettext("Edit arguments"), action_id=EDIT_ARGS, value=ref))
        if "cancel" in approval.actions:  # the requester may withdraw their own, an admin any
            elements.append(ButtonElement(text=tr.gettext("Cancel"), action_id=CANCEL, value=approval.ref))
        if elements:
            blocks.append(ActionsBlock(block_id=f"home_call_{approval.ref}"[:255], elements=elements))
    if len(approvals) > HOME_LIMIT:
        more = tr.ngettext("…and {n} more.", "…and {n} more.", len(approvals) - HOME_LIMIT)
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=more)]))
    return blocks


def approvals_so_far(approval: HomeApproval, tr: Translator) -> str:
    """Four eyes, as the thread's message says it: "1 of 2 approvals: <@U2>"."""
    # the noun agrees with how many are needed: "1 of 2 approvals"
    count = tr.ngettext(
        "{count} of {n} approval", "{count} of {n} approvals", approval.approvals_required,
        count=len(approval.approvals),
    )  # fmt: skip
    line = f":busts_in_silhouette: {count}"
    people = [person_words(user, approval.stood_in_for, tr) for user in approval.approvals]
    return line + (": " + ", ".join(people) if people else "")


def _mention(approver: str) -> str:
    return f"<!subteam^{approver}>" if approver.startswith("S") else f"<@{approver}>"


def build_bulk_decline_modal(selected: list[str], tr: Translator) -> dict[str, Any]:
    """The modal "Decline selected with reason" opens: one optional reason for every selected approval;
    `private_metadata` is the selection (JSON), checked again item by item when it is submitted."""
    kept: list[str] = []
    for value in selected:  # private_metadata holds at most 3000 characters
        if len(json.dumps([*kept, value])) > 3000:
            break
        kept.append(value)
    how = tr.ngettext(
        "Decline the {n} request you selected; the model reads the reason.",
        "Decline the {n} requests you selected; the model reads the reason.",
        len(kept),
    )
    return View(
        type="modal",
        callback_id=BULK_DECLINE_REASON_CALLBACK,
        private_metadata=json.dumps(kept),
        title=tr.gettext("Decline selected"),
        submit=tr.gettext("Decline"),
        close=tr.gettext("Cancel"),
        blocks=[
            SectionBlock(text=MarkdownTextObject(text=how)),
            InputBlock(
                block_id=REASON_BLOCK_ID,
                label=tr.gettext("Reason"),
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


def build_policy_modal(policy: ToolPolicy, tr: Translator) -> dict[str, Any]:
    """The modal an admin edits one tool's policy in; `private_metadata` is the tool's name."""
    modes = [Option(value=str(mode), text=tr.gettext(label)) for mode, label in MODE_LABELS.items()]
    self_option = Option(value="allowed", text=tr.gettext("The requester may approve their own call"))
    blocks: list[Block] = [
        InputBlock(
            block_id=MODE_BLOCK,
            label=tr.gettext("Mode"),
            element=StaticSelectElement(
                action_id="value",
                options=modes,
                initial_option=next(o for o in modes if o.value == str(policy.mode)),
            ),
        ),
        InputBlock(
            block_id=APPROVERS_BLOCK,
            label=tr.gettext("Approvers"),
            optional=True,
            hint=tr.gettext(
                "Slack user IDs (U…) and user-group IDs (S…), separated by commas. Empty: anyone in the conversation."
            ),
            element=PlainTextInputElement(action_id="value", initial_value=",".join(policy.approvers) or None),
        ),
        InputBlock(
            block_id=SELF_APPROVAL_BLOCK,
            label=tr.gettext("Self-approval"),
            optional=True,
            element=CheckboxesElement(
                action_id="value",
                options=[self_option],
                initial_options=[self_option] if policy.self_approval else None,
            ),
        ),
        InputBlock(
            block_id=EXPIRY_BLOCK,
            label=tr.gettext("Expiry (seconds)"),
            optional=True,
            hint=tr.gettext(
                "A waiting approval, or a question the tool asked, expires after this long. Empty or 0: never."
            ),
            element=PlainTextInputElement(
                action_id="value", initial_value=str(policy.expires_after) if policy.expires_after else None
            ),
        ),
        InputBlock(
            block_id=APPROVALS_BLOCK,
            label=tr.gettext("Approvals required"),
            optional=True,
            hint=tr.gettext(
                "Distinct people who must approve a call before it runs (2: four eyes); the requester never "
                "counts. Empty or 1: one approval."
            ),
            element=PlainTextInputElement(action_id="value", initial_value=str(policy.approvals_required)),
        ),
        InputBlock(
            block_id=GRANTS_BLOCK,
            label=tr.gettext("Standing grants (seconds)"),
            optional=True,
            hint=tr.gettext(
                "The longest an approver may allow this tool in one thread without asking again (3600: "
                '"Approve and allow for 1 hour in this thread"); 60 to 604800. Empty or 0: no grants. '
                "Never offered while several approvals are required."
            ),
            element=PlainTextInputElement(
                action_id="value", initial_value=str(policy.grant_seconds) if policy.grant_seconds else None
            ),
        ),
        InputBlock(
            block_id=UNDO_BLOCK,
            label=tr.gettext("Undo window (seconds)"),
            optional=True,
            hint=tr.gettext(
                "How long after a call ran whoever approved it (or an admin) may undo it, when the tool declares "
                "how; up to 604800. Empty: 300. 0: no undo."
            ),
            element=PlainTextInputElement(action_id="value", initial_value=str(policy.undo_seconds)),
        ),
        InputBlock(
            block_id=ESCALATE_TO_BLOCK,
            label=tr.gettext("Escalate to"),
            optional=True,
            hint=tr.gettext(
                "A user-group ID (S…: a DM to each member) or channel ID (C…: one post) that an approval still "
                "waiting after the delay below is brought to, with the same buttons. Empty: no escalation."
            ),
            element=PlainTextInputElement(action_id="value", initial_value=policy.escalate_to or None),
        ),
        InputBlock(
            block_id=ESCALATE_AFTER_BLOCK,
            label=tr.gettext("Escalate after (seconds)"),
            optional=True,
            hint=tr.gettext(
                "Seconds without a decision before it is escalated; shorter than the expiry. Empty or 0: never."
            ),
            element=PlainTextInputElement(
                action_id="value", initial_value=str(policy.escalate_after) if policy.escalate_after else None
            ),
        ),
        InputBlock(
            block_id=RULES_BLOCK,
            label=tr.gettext("Rules"),
            optional=True,
            hint=tr.gettext(
                "One rule a line, the first that matches decides: if CONDITION then allow|require_approval|refuse, "
                "optionally by U1,S2 (named 'NAME') [trial]. Add, reorder or delete lines to change them."
            ),
            element=PlainTextInputElement(
                action_id="value",
                multiline=True,
                initial_value="\n".join(rule_words(rule) for rule in policy.rules) or None,
            ),
        ),
    ]
    return View(
        type="modal",
        callback_id=POLICY_CALLBACK,
        private_metadata=policy.tool_name,
        title=tr.gettext("Policy: {tool}", tool=policy.tool_name)[:24],
        submit=tr.gettext("Save"),
        close=tr.gettext("Cancel"),
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
        "undo_seconds": (field(UNDO_BLOCK).get("value") or "").strip(),
        "escalate_to": (field(ESCALATE_TO_BLOCK).get("value") or "").strip(),
        "escalate_after": (field(ESCALATE_AFTER_BLOCK).get("value") or "").strip(),
        "rules": field(RULES_BLOCK).get("value") or "",
    }
