"""How Slack words the runtime's rule of who may act (`bot.agent`'s `_authorize`): people as mentions,
user groups as group mentions, tools as code spans. The rule itself lives in the runtime, which asks
this adapter's `Directory` about people, groups and conversations; nothing here decides. What a person
reads is in their language (`refusal_text`, `people_in`)."""

from __future__ import annotations

from collections.abc import Sequence

from bot.agent import Naming, Refusal, RefusalReason

from .translator import Translator

SLACK_NAMING = Naming(person="<@{}>".format, group="<!subteam^{}>".format, tool="`{}`".format, to_actor=True)
"""Slack's mrkdwn names, for a refusal shown in Slack to the one who acted."""


def people_in(approvers: Sequence[str], tr: Translator) -> str:
    """The approvers as Slack mentions in the reader's words (`<@U1> or <!subteam^S1>`); none named:
    anyone in the conversation."""
    names = [SLACK_NAMING.group(a) if a.startswith("S") else SLACK_NAMING.person(a) for a in approvers]
    if not names:
        return tr.gettext("anyone in the conversation")
    if len(names) == 1:
        return names[0]
    return tr.gettext("{names} or {last}", names=", ".join(names[:-1]), last=names[-1])


def refusal_text(refusal: Refusal, tr: Translator) -> str:
    """The runtime's refusal (its reason and who may instead) in the words of its one reader, who acted."""
    tool, who = SLACK_NAMING.tool(refusal.tool_name), people_in(refusal.may_instead, tr)
    match refusal.reason:
        case RefusalReason.NOT_AN_APPROVER:
            return tr.gettext("Only {who} may decide {tool} requests.", who=who, tool=tool)
        case RefusalReason.NOT_IN_CONVERSATION:
            return tr.gettext("Only people in the conversation may decide {tool} requests.", tool=tool)
        case RefusalReason.SELF_APPROVAL:
            return tr.gettext(
                "The policy for {tool} does not let you approve your own request: ask someone else.", tool=tool
            )
        case RefusalReason.TOOL_DISABLED:
            return tr.gettext(
                "An admin disabled {tool}, so this request cannot be approved. You may decline it.", tool=tool
            )
        case RefusalReason.ALREADY_APPROVED_BY_YOU:
            return tr.gettext("Your approval does not count: you already approved it; it waits for someone else.")
        case RefusalReason.REQUESTER_CANNOT_COUNT:
            return tr.gettext(
                "{tool} needs {needed} approvals from people other than who asked: your own approval does not "
                "count, ask someone else.",
                tool=tool,
                needed=refusal.needed,
            )
        case RefusalReason.EDIT_NOT_ALLOWED:
            return tr.gettext(
                "{tool} needs several approvers, who all approve the same arguments: they cannot be edited.",
                tool=tool,
            )
        case RefusalReason.ARGS_CHANGED:
            return tr.gettext(
                "Your approval does not count: its arguments are not those the earlier approvals were given for; "
                "decline it."
            )
        case RefusalReason.NOT_THE_SPEAKER:
            return tr.gettext("Only {who} may answer this question from {tool}.", who=who, tool=tool)
        case RefusalReason.NOT_THE_UNDOER:
            return tr.gettext("Only {who}, who approved it, or an admin may undo this {tool} call.", who=who, tool=tool)
        case RefusalReason.NOT_THE_GRANTER:
            return tr.gettext("Only {who}, who gave it, or an admin may revoke this grant.", who=who)
        case RefusalReason.GRANT_NOT_ALLOWED:
            return tr.gettext(
                "No standing grant for {tool}: {detail}. Nothing was changed; the request still waits.",
                tool=tool,
                detail=refusal.detail,
            )
        case RefusalReason.DIRECTORY_UNAVAILABLE:
            return tr.gettext(
                "I could not check whether you may decide this: {detail}. Nothing was changed; try again.",
                detail=refusal.detail,
            )
        case RefusalReason.HELD_ELSEWHERE:
            return tr.gettext(
                "This question waits inside a sub-agent's MCP call that another bot process holds, and this "
                "answer could not reach it, so nothing was decided. Try again in a moment, or decline it."
            )
        case RefusalReason.OWN_REQUEST_AS_DELEGATE:
            return tr.gettext(
                "You decide for {delegator} while they are away, but not on your own request: ask someone else.",
                delegator=f"<@{refusal.detail}>",
            )
    return refusal.text(SLACK_NAMING)  # a reason this adapter has no words for yet: the runtime's English
