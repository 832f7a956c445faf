"""Block Kit for an approval: the waiting message with its four buttons, and the same message once decided.

Pure functions of small dataclasses and the reader's `Translator`; tested without Slack. A message in a
thread is built in the conversation's language, a DM copy in its reader's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
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

from .mrkdwn import escape, slack_date
from .rules_builder import call_rule_line
from .translator import Translator

APPROVE = "tool_approve"
DECLINE = "tool_decline"
DECLINE_WITH_REASON = "tool_decline_with_reason"
EDIT_ARGS = "tool_edit_args"
CANCEL = "tool_cancel"
"""Withdraw the waiting call: it is cancelled (not declined), and the model is told so."""
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
    stood_in_for: tuple[tuple[str, str], ...] = ()
    """(delegate, delegator) of each approval made standing in for someone: "<@bob> for <@alice>"."""
    grant_seconds: int | None = None
    """The standing grant the tool's policy allows now, in seconds (None: no grant buttons)."""
    rule: str | None = None
    """The admin's rule that made it wait, in one line ("rule 1: Needs finance: args.amount > 100.0")."""
    rule_fields: Mapping[str, Any] | None = None
    """The same rule as stored, worded in the reader's language (`rule` is shown when it is None)."""
    actions: frozenset[str] = frozenset({"approve", "decline", "edit_args", "grant", "cancel"})
    """What the runtime's rule allows the message's readers (`bot.agent.Action` values): the message offers
    only these buttons (a four-eyes call: no edit and no grant; a disabled tool's: only decline)."""


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
    cancelled: bool = False
    """Someone withdrew it while it waited (a Cancel, "never mind" in the thread): not a decline."""
    approvals: tuple[str, ...] = ()
    """Four eyes: everyone who approved it, in order (the last of them is `decided_by` once approved)."""
    stood_in_for: tuple[tuple[str, str], ...] = ()
    """(delegate, delegator) of each decision or approval made standing in for someone."""


def format_args(args: Any, tr: Translator, *, limit: int = ARGS_LIMIT, value_limit: int = VALUE_LIMIT) -> str:
    """The arguments as an indented JSON code block in mrkdwn: long strings cut, the whole cut at `limit`,
    Slack markup escaped, and no way for a value to close the code block early."""
    text = json.dumps(_shorten(args, value_limit, tr), indent=2, ensure_ascii=False, default=str)
    if len(text) > limit:
        text = text[:limit].rstrip() + "\n" + _more(len(text) - limit, tr)
    text = escape(text).replace("```", "`\u200b``")
    return f"```\n{text}\n```"


def _more(count: int, tr: Translator) -> str:
    return tr.ngettext("… ({n} more character)", "… ({n} more characters)", count)


def _shorten(value: Any, value_limit: int, tr: Translator) -> Any:
    if isinstance(value, str) and len(value) > value_limit:
        return value[:value_limit] + _more(len(value) - value_limit, tr)
    if isinstance(value, dict):
        return {key: _shorten(item, value_limit, tr) for key, item in value.items()}
    if isinstance(value, list):
        return [_shorten(item, value_limit, tr) for item in value]
    return value


def date_or_now(moment: datetime | None, tr: Translator) -> str:
    """`slack_date`, or "just now" for a moment not known (a decision not stored yet)."""
    return slack_date(moment) if moment is not None else tr.gettext("just now")


def approval_text(view: ApprovalView, tr: Translator) -> str:
    """The notification text of an approval message."""
    if view.interrupted:
        return tr.gettext("Interrupted, may or may not have taken effect: {tool}. Run it again?", tool=view.tool_name)
    return tr.gettext("Approval needed: {tool}", tool=view.tool_name)


def build_approval_blocks(view: ApprovalView, tr: Translator) -> list[Block]:
    """The waiting approval: tool, description, arguments, who asked and why, and the four buttons.

    An interrupted call says it may or may not have taken effect, and offers to run it again or decline
    (its arguments are not edited: what may have run is what would run again)."""
    tool = f"`{escape(view.tool_name)}`"
    if view.interrupted:
        blocks = _describe(view, tr, headline=":warning: " + tr.gettext("*Interrupted*: {tool}", tool=tool))
        note = tr.gettext(
            "This tool started but was interrupted before it finished (the bot stopped or crashed), so it *may or "
            "may not have taken effect*. Check first, then *Run it again* or *Decline*."
        )
        blocks.insert(1, SectionBlock(text=MarkdownTextObject(text=note)))
        approve_text = tr.gettext("Run it again")
    else:
        headline = ":raised_hand: " + tr.gettext("*Approval needed* to run {tool}", tool=tool)
        blocks = _describe(view, tr, headline=headline)
        approve_text = tr.gettext("Approve")
    if view.escalated:
        blocks.insert(0, ContextBlock(elements=[MarkdownTextObject(text=view.escalated)]))
    offered, buttons = view.actions, []
    if "approve" in offered:
        buttons.append(ButtonElement(text=approve_text, action_id=APPROVE, value=view.ref, style="primary"))
    if "grant" in offered and view.grant_seconds and not view.interrupted:
        lasting = duration_words(view.grant_seconds, tr)
        in_thread = tr.gettext("Approve and allow for {time} in this thread", time=lasting)
        same_args = tr.gettext("Approve and allow these arguments for {time}", time=lasting)
        buttons.append(ButtonElement(text=in_thread, action_id=APPROVE_AND_GRANT, value=view.ref))
        buttons.append(ButtonElement(text=same_args, action_id=APPROVE_AND_GRANT_SAME_ARGS, value=view.ref))
    if "decline" in offered:
        buttons.append(ButtonElement(text=tr.gettext("Decline"), action_id=DECLINE, value=view.ref, style="danger"))
        buttons.append(
            ButtonElement(text=tr.gettext("Decline with reason"), action_id=DECLINE_WITH_REASON, value=view.ref)
        )
    if "edit_args" in offered and not view.interrupted:  # what may have run is what would run again
        buttons.append(ButtonElement(text=tr.gettext("Edit arguments"), action_id=EDIT_ARGS, value=view.ref))
    if "cancel" in offered:  # withdraw it: cancelled, not declined
        buttons.append(ButtonElement(text=tr.gettext("Cancel"), action_id=CANCEL, value=view.ref))
    if view.approvals_required > 1:
        blocks.append(SectionBlock(text=MarkdownTextObject(text=approvals_line(view, tr))))
    rule = policy_line(view, tr)
    if rule:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=rule)]))
    if buttons:
        blocks.append(ActionsBlock(block_id=ACTIONS_BLOCK_ID, elements=buttons))
    return blocks


def duration_words(seconds: int, tr: Translator) -> str:
    """A grant's length for people: "1 hour", "90 minutes", "2 days", "45 seconds"."""
    if seconds >= 86400 and seconds % 86400 == 0:
        return tr.ngettext("{n} day", "{n} days", seconds // 86400)
    if seconds >= 3600 and seconds % 3600 == 0:
        return tr.ngettext("{n} hour", "{n} hours", seconds // 3600)
    if seconds >= 60 and seconds % 60 == 0:
        return tr.ngettext("{n} minute", "{n} minutes", seconds // 60)
    return tr.ngettext("{n} second", "{n} seconds", seconds)


def approvals_line(view: ApprovalView, tr: Translator) -> str:
    """Four eyes: how many of the approvals needed are in, and whose ("1 of 2 approvals: <@U2>")."""
    # the noun agrees with how many are needed: "1 of 2 approvals"
    count = tr.ngettext(
        "{count} of {n} approval", "{count} of {n} approvals", view.approvals_required,
        count=len(view.approvals),
    )  # fmt: skip
    line = f":busts_in_silhouette: *{count}*"
    if view.approvals:
        line += ": " + ", ".join(person_words(user, view.stood_in_for, tr) for user in view.approvals)
    runs = tr.gettext(
        "It runs once {required} different people approve (not {requester}, who asked).",
        required=view.approvals_required,
        requester=f"<@{view.requester}>",
    )
    return f"{line}\n{runs}"


def policy_line(view: ApprovalView, tr: Translator) -> str:
    """Who may approve the call and when it expires, as the tool's policy says (when the message was shown)."""
    parts = []
    if view.who_may_approve:
        parts.append(tr.gettext("Who may approve: {who}", who=view.who_may_approve))
    if view.expires_at is not None:
        parts.append(tr.gettext("Expires {date}", date=slack_date(view.expires_at)))
    elif view.who_may_approve:
        parts.append(tr.gettext("Does not expire"))
    return " · ".join(parts)


def build_decided_approval_blocks(view: ApprovalView, decision: DecisionView, tr: Translator) -> list[Block]:
    """The approval once settled: no buttons; the decision, who made it, when (and why, if declined)."""
    tool = f"`{escape(view.tool_name)}`"
    date = date_or_now(decision.decided_at, tr)
    if decision.expired:
        blocks = _describe(view, tr, headline=":hourglass: " + tr.gettext("*Expired*: {tool}", tool=tool))
        if decision.reason:  # said once, not twice
            line = tr.gettext(
                "Expired on {date}: {reason}, so it was not run.", date=date, reason=escape(decision.reason)
            )
        else:
            line = tr.gettext("Expired on {date}: nobody decided in time, so it was not run.", date=date)
        blocks.append(SectionBlock(text=MarkdownTextObject(text=line)))
        return blocks
    if decision.cancelled:
        blocks = _describe(
            view, tr, headline=":heavy_multiplication_x: " + tr.gettext("*Cancelled*: {tool}", tool=tool)
        )
        who = f"<@{decision.decided_by}>" if decision.decided_by else None
        line = (
            tr.gettext("Cancelled by {user} on {date}, so it was not run.", user=who, date=date)
            if who
            else tr.gettext("Cancelled on {date}, so it was not run.", date=date)
        )
        if decision.reason:
            line += "\n" + tr.gettext("Reason: {reason}", reason=escape(decision.reason))
        blocks.append(SectionBlock(text=MarkdownTextObject(text=line)))
        return blocks
    if decision.approved and view.interrupted:
        headline = tr.gettext("*Run again*: {tool} (it had been interrupted)", tool=tool)
    elif decision.approved and decision.edited:
        headline = tr.gettext("*Approved with edited arguments*: {tool}", tool=tool)
    elif decision.approved:
        headline = tr.gettext("*Approved*: {tool}", tool=tool)
    else:
        headline = tr.gettext("*Declined*: {tool}", tool=tool)
    emoji = ":white_check_mark:" if decision.approved else ":no_entry_sign:"
    blocks = _describe(view, tr, headline=f"{emoji} {headline}")
    who = person_words(decision.decided_by, decision.stood_in_for, tr) if decision.decided_by else None
    if decision.approved and len(decision.approvals) > 1:  # four eyes: every approver, not only the last
        who = ", ".join(person_words(user, decision.stood_in_for, tr) for user in decision.approvals)
    if decision.approved:
        line = (
            tr.gettext("Approved by {user} on {date}", user=who, date=date)
            if who
            else tr.gettext("Approved by the bot on {date}", date=date)
        )
    else:
        line = (
            tr.gettext("Declined by {user} on {date}", user=who, date=date)
            if who
            else tr.gettext("Declined by the bot on {date}", date=date)
        )
    if decision.reason:
        line += "\n" + tr.gettext("Reason: {reason}", reason=escape(decision.reason))
    blocks.append(SectionBlock(text=MarkdownTextObject(text=line)))
    return blocks


def person_words(user: str, stood_in_for: tuple[tuple[str, str], ...], tr: Translator) -> str:
    """A person who decided or approved, in mrkdwn: "<@bob>", or "<@bob> for <@alice>" when they stood in
    for someone (a delegation)."""
    delegator = dict(stood_in_for).get(user)
    if delegator is None:
        return f"<@{user}>"
    return tr.gettext("{delegate} for {delegator}", delegate=f"<@{user}>", delegator=f"<@{delegator}>")


def decided_text(view: ApprovalView, decision: DecisionView, tr: Translator) -> str:
    if decision.expired:
        return tr.gettext("Expired: {tool}", tool=view.tool_name)
    if decision.cancelled:
        return tr.gettext("Cancelled: {tool}", tool=view.tool_name)
    if decision.approved:
        return tr.gettext("Approved: {tool}", tool=view.tool_name)
    return tr.gettext("Declined: {tool}", tool=view.tool_name)


def _describe(view: ApprovalView, tr: Translator, *, headline: str) -> list[Block]:
    blocks: list[Block] = [SectionBlock(text=MarkdownTextObject(text=headline))]
    if view.title or view.source or view.hints:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=about_tool(view, tr))]))
    if view.description:
        blocks.append(SectionBlock(text=MarkdownTextObject(text=_quote(escape(view.description[:1000])))))
    blocks.append(SectionBlock(text=MarkdownTextObject(text=format_args(view.args, tr))))
    if view.preview is not None:
        blocks.append(SectionBlock(text=MarkdownTextObject(text=preview_section(view.preview, tr))))
    rule = (call_rule_line(view.rule_fields, tr) if view.rule_fields else None) or view.rule
    if rule:
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=f":scroll: {escape(rule[:300])}")]))
    requester = f"<@{view.requester}>"
    if view.request_text:
        request = view.request_text.strip()
        if len(request) > REQUEST_LIMIT:
            request = request[:REQUEST_LIMIT] + "…"
        asked = tr.gettext("Requested by {user}: “{request}”", user=requester, request=escape(request))
    else:
        asked = tr.gettext("Requested by {user}", user=requester)
    blocks.append(ContextBlock(elements=[MarkdownTextObject(text=asked)]))
    return blocks


PREVIEW_LIMIT = 1500
"""Characters of a preview shown."""


def preview_section(preview: PreviewView, tr: Translator) -> str:
    """The preview in mrkdwn: what the dry run said, or that it failed (the buttons work either way)."""
    text = preview.text.strip()
    if len(text) > PREVIEW_LIMIT:
        text = text[:PREVIEW_LIMIT] + _more(len(text) - PREVIEW_LIMIT, tr)
    if not preview.ok:
        failed = tr.gettext("*Preview failed*: {why}", why=escape(text)) if text else tr.gettext("*Preview failed*")
        return f":warning: {failed}\n" + tr.gettext("You can still approve or decline.")
    return ":mag: " + tr.gettext("*Preview* (a dry run; nothing was changed):") + f"\n{_quote(escape(text))}"


def about_tool(view: ApprovalView, tr: Translator) -> str:
    """One line on the tool: its title, where it comes from, and what it says of itself (hints, unchecked)."""
    parts = [f"*{escape(view.title[:200])}*"] if view.title else []
    if view.source:
        parts.append(tr.gettext("from {source}", source=escape(view.source[:200])))
    if view.hints:
        hints = ", ".join(escape(h[:50]) for h in view.hints)
        parts.append(tr.gettext("it says of itself (unchecked): {hints}", hints=hints))
    return " · ".join(parts)


def _quote(text: str) -> str:
    return "\n".join(f">{line}" for line in text.split("\n"))


def build_closed_approval_blocks(view: ApprovalView, note: str, tr: Translator) -> list[Block]:
    """An approval whose call no longer waits and whose outcome is unknown (its run is gone): no buttons.
    `note` (in the reader's words) says why."""
    blocks = _describe(view, tr, headline=f":grey_question: `{escape(view.tool_name)}`")
    blocks.append(SectionBlock(text=MarkdownTextObject(text=escape(note))))
    return blocks
