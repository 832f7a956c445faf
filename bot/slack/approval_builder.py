"""Block Kit for an approval: the waiting message with its four buttons, and the same message once decided.

Pure functions over small dataclasses; tested without Slack.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    MarkdownTextObject,
    SectionBlock,
)

from .mrkdwn import escape

APPROVE = "tool_approve"
DECLINE = "tool_decline"
DECLINE_WITH_REASON = "tool_decline_with_reason"
EDIT_ARGS = "tool_edit_args"
APPROVE_AND_GRANT = "tool_approve_grant"
"""Approve, and allow the tool in this thread for the policy's grant time (a standing grant)."""
APPROVE_AND_GRANT_SAME_ARGS = "tool_approve_grant_same_args"
"""The same, for later calls with exactly these arguments only."""
ACTIONS_BLOCK_ID = "tool_call_decision"

ARGS_LIMIT = 2500
"""Characters of arguments shown (a section's text holds at most 3,000)."""
VALUE_LIMIT = 300
"""Characters shown of one string argument before it is cut."""
REQUEST_LIMIT = 300


@dataclass(frozen=True, kw_only=True)
class ApprovalView:
    """What an approval message shows."""

    ref: str
    """The opaque reference the buttons carry."""
    tool_name: str
    description: str = ""
    """The tool's description, when the agent knows the tool."""
    title: str | None = None
    """The tool's name for people (an MCP tool's title)."""
    source: str | None = None
    """Where the tool comes from (e.g. "MCP server `tickets`"), when not the deployer's code."""
    hints: tuple[str, ...] = ()
    """What the tool says of itself, unchecked (an MCP server's annotations)."""
    args: Any
    requester: str
    """The Slack user whose request led to the call."""
    request_text: str | None = None
    """What they asked: the "why"."""
    who_may_approve: str = ""
    """The policy's approvers in mrkdwn (e.g. `<@U2> or <!subteam^S1>`, `anyone in the conversation`),
    with any self-approval rule; empty: not said."""
    expires_at: datetime | None = None
    """When the waiting approval is declined as expired (None: never)."""
    interrupted: bool = False
    """The tool had started and its result was never stored (a crash, a stop): it may or may not have
    taken effect, and approving runs it again."""
    preview: PreviewView | None = None
    """What the tool's dry run said (None: the tool has no preview)."""
    approvals_required: int = 1
    """Distinct approvers the tool's policy needs (four eyes: 2), as it says now."""
    escalated: str | None = None
    """On a copy posted by the escalation sweep: why it is brought here (mrkdwn); None elsewhere."""
    approvals: tuple[str, ...] = ()
    """Who approved so far (Slack user IDs), when several approvals are needed."""
    grant_seconds: int | None = None
    """The standing grant the tool's policy allows now, in seconds (None: no grant buttons)."""
    rule: str | None = None
    """The admin's rule that made it wait, in one line ("rule 1: Needs finance: args.amount > 100.0")."""


@dataclass(frozen=True, kw_only=True)
class PreviewView:
    """What the tool's dry run said before the approval was posted."""

    ok: bool
    """False: the preview failed or did not answer in time; `text` says why."""
    text: str
    """What it said (its text, or its JSON value as text), or why it failed."""


@dataclass(frozen=True, kw_only=True)
class DecisionView:
    """The outcome shown once an approval is settled."""

    approved: bool
    decided_by: str | None
    """Slack user id of who decided (None: decided outside Slack, e.g. expiry)."""
    decided_at: datetime | None
    reason: str | None = None
    edited: bool = False
    """The approver changed the arguments; `ApprovalView.args` are then the edited ones."""
    expired: bool = False
    """Nobody decided before the tool policy's expiry: declined as expired."""


def format_args(args: Any, *, limit: int = ARGS_LIMIT, value_limit: int = VALUE_LIMIT) -> str:
    """The arguments as an indented JSON code block in mrkdwn: long strings cut, the whole cut at `limit`,
    Slack markup escaped, and no way for a value to close the code block early."""
    text = json.dumps(_shorten(args, value_limit), indent=2, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit].rstrip() + f"\n… ({len(text) - limit} more characters)"
    text = escape(text).replace("```", "`\u200b``")
    return f"```\n{text}\n```"


def _shorten(value: Any, value_limit: int) -> Any:
    if isinstance(value, str) and len(value) > value_limit:
        return value[:value_limit] + f"… ({len(value) - value_limit} more characters)"
    if isinstance(value, dict):
        return {key: _shorten(item, value_limit) for key, item in value.items()}
    if isinstance(value, list):
        return [_shorten(item, value_limit) for item in value]
    return value


def slack_date(moment: datetime | None) -> str:
    """A date Slack shows in each reader's own time zone."""
    if moment is None:
        return "just now"
    fallback = moment.strftime("%Y-%m-%d %H:%M UTC")
    return f"<!date^{int(moment.timestamp())}^{{date_short_pretty}} at {{time}}|{fallback}>"


INTERRUPTED_NOTE = (
    "This tool started but was interrupted before it finished (the bot stopped or crashed), so it *may or "
    "may not have taken effect*. Check first, then *Run it again* or *Decline*."
)


def approval_text(view: ApprovalView) -> str:
    """The notification text of an approval message."""
    if view.interrupted:
        return f"Interrupted, may or may not have taken effect: {view.tool_name}. Run it again?"
    return f"Approval needed: {view.tool_name}"


def build_approval_blocks(view: ApprovalView) -> list[Block]:
    """The waiting approval: tool, description, arguments, who asked and why, and the four buttons.

    An interrupted call says it may or may not have taken effect, and offers to run it again or decline
    (its arguments are not edited: what may have run is what would run again)."""
    if view.interrupted:
        blocks = _describe(view, headline=f":warning: *Interrupted*: `{escape(view.tool_name)}`")
        blocks.insert(1, SectionBlock(text=MarkdownTextObject(text=INTERRUPTED_NOTE)))
        approve_text = "Run it again"
    else:
        blocks = _describe(view, headline=f":raised_hand: *Approval needed* to run `{escape(view.tool_name)}`")
        approve_text = "Approve"
    if view.escalated:
        blocks.insert(0, ContextBlock(elements=[MarkdownTextObject(text=view.escalated)]))
    buttons = [
        ButtonElement(text=approve_text, action_id=APPROVE, value=view.ref, style="primary"),
        ButtonElement(text="Decline", action_id=DECLINE, value=view.ref, style="danger"),
        ButtonElement(text="Decline with reason", action_id=DECLINE_WITH_REASON, value=view.ref),
    ]
    if not view.interrupted and view.approvals_required <= 1:  # several approvers approve the same arguments
        buttons.append(ButtonElement(text="Edit arguments", action_id=EDIT_ARGS, value=view.ref))
    if not view.interrupted and view.approvals_required <= 1 and view.grant_seconds:  # a grant would bypass a quorum
        lasting = duration_words(view.grant_seconds)
        buttons.insert(
            1, ButtonElement(text=f"Approve and allow for {lasting} in this thread", action_id=APPROVE_AND_GRANT,
                             value=view.ref)
        )  # fmt: skip
        buttons.insert(
            2, ButtonElement(text=f"Approve and allow these arguments for {lasting}",
                             action_id=APPROVE_AND_GRANT_SAME_ARGS, value=view.ref)
        )  # fmt: skip
    if view.approvals_required > 1:
        blocks.append(SectionBlock(text=MarkdownTextObject(text=approvals_line(view))))
    rule = policy_line(view)
    if rule:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=rule)]))
    blocks.append(ActionsBlock(block_id=ACTIONS_BLOCK_ID, elements=buttons))
    return blocks


def duration_words(seconds: int) -> str:
    """A grant's length for people: "1 hour", "90 minutes", "2 days", "45 seconds"."""
    for unit, size in (("day", 86400), ("hour", 3600), ("minute", 60)):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'s' if count != 1 else ''}"
    return f"{seconds} seconds"


def approvals_line(view: ApprovalView) -> str:
    """Four eyes: how many of the approvals needed are in, and whose ("1 of 2 approvals: <@U2>")."""
    line = f":busts_in_silhouette: *{len(view.approvals)} of {view.approvals_required} approvals*"
    if view.approvals:
        line += ": " + ", ".join(f"<@{user}>" for user in view.approvals)
    return (
        line
        + f"\nIt runs once {view.approvals_required} different people approve (not <@{view.requester}>, who asked)."
    )


def policy_line(view: ApprovalView) -> str:
    """Who may approve the call and when it expires, as the tool's policy says (when the message was shown)."""
    parts = []
    if view.who_may_approve:
        parts.append(f"Who may approve: {view.who_may_approve}")
    if view.who_may_approve or view.expires_at is not None:
        parts.append(f"Expires {slack_date(view.expires_at)}" if view.expires_at else "Does not expire")
    return " · ".join(parts)


def build_decided_approval_blocks(view: ApprovalView, decision: DecisionView) -> list[Block]:
    """The approval once settled: no buttons; the decision, who made it, when (and why, if declined)."""
    if decision.expired:
        blocks = _describe(view, headline=f":hourglass: *Expired*: `{escape(view.tool_name)}`")
        why = escape(decision.reason) if decision.reason else "nobody decided in time"  # said once, not twice
        line = f"Expired on {slack_date(decision.decided_at)}: {why}, so it was not run."
        blocks.append(SectionBlock(text=MarkdownTextObject(text=line)))
        return blocks
    if decision.approved and view.interrupted:
        headline = f":white_check_mark: *Run again*: `{escape(view.tool_name)}` (it had been interrupted)"
    elif decision.approved:
        verb = "Approved with edited arguments" if decision.edited else "Approved"
        headline = f":white_check_mark: *{verb}*: `{escape(view.tool_name)}`"
    else:
        headline = f":no_entry_sign: *Declined*: `{escape(view.tool_name)}`"
    blocks = _describe(view, headline=headline)
    who = f"<@{decision.decided_by}>" if decision.decided_by else "the bot"
    outcome = "Approved" if decision.approved else "Declined"
    line = f"{outcome} by {who} on {slack_date(decision.decided_at)}"
    if decision.reason:
        line += f"\nReason: {escape(decision.reason)}"
    blocks.append(SectionBlock(text=MarkdownTextObject(text=line)))
    return blocks


def decided_text(view: ApprovalView, decision: DecisionView) -> str:
    outcome = "Expired" if decision.expired else "Approved" if decision.approved else "Declined"
    return f"{outcome}: {view.tool_name}"


def _describe(view: ApprovalView, *, headline: str) -> list[Block]:
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=headline))]
    if view.title or view.source or view.hints:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=about_tool(view))]))
    if view.description:
        blocks.append(SectionBlock(text=MarkdownTextObject(text=_quote(escape(view.description[:1000])))))
    blocks.append(SectionBlock(text=MarkdownTextObject(text=format_args(view.args))))
    if view.preview is not None:
        blocks.append(SectionBlock(text=MarkdownTextObject(text=preview_section(view.preview))))
    if view.rule:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=f":scroll: {escape(view.rule[:300])}")]))
    asked = f"Requested by <@{view.requester}>"
    if view.request_text:
        request = view.request_text.strip()
        if len(request) > REQUEST_LIMIT:
            request = request[:REQUEST_LIMIT] + "…"
        asked += f": “{escape(request)}”"
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=asked)]))
    return blocks


PREVIEW_LIMIT = 1500
"""Characters of a preview shown."""


def preview_section(preview: PreviewView) -> str:
    """The preview in mrkdwn: what the dry run said, or that it failed (the buttons work either way)."""
    text = preview.text.strip()
    if len(text) > PREVIEW_LIMIT:
        text = text[:PREVIEW_LIMIT] + f"… ({len(text) - PREVIEW_LIMIT} more characters)"
    if not preview.ok:
        return f":warning: *Preview failed*: {escape(text)}\nYou can still approve or decline."
    return f":mag: *Preview* (a dry run; nothing was changed):\n{_quote(escape(text))}"


def about_tool(view: ApprovalView) -> str:
    """One line on the tool: its title, where it comes from, and what it says of itself (hints, unchecked)."""
    parts = [f"*{escape(view.title[:200])}*"] if view.title else []
    if view.source:
        parts.append(f"from {escape(view.source[:200])}")
    if view.hints:
        parts.append("it says of itself (unchecked): " + ", ".join(escape(h[:50]) for h in view.hints))
    return " · ".join(parts)


def _quote(text: str) -> str:
    return "\n".join(f">{line}" for line in text.split("\n"))


def build_closed_approval_blocks(view: ApprovalView, note: str) -> list[Block]:
    """An approval whose call no longer waits and whose outcome is unknown (its run is gone): no buttons."""
    blocks = _describe(view, headline=f":grey_question: `{escape(view.tool_name)}`")
    blocks.append(SectionBlock(text=MarkdownTextObject(text=escape(note))))
    return blocks
