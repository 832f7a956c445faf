"""Block Kit for the approval analytics an admin opens from their App Home: how approvals are really
decided, per tool and per person (`memory.approval_analytics`), as a modal in the admin's language.

A pure function of the numbers and the reader's `Translator`. Each tool and each person is a section
whose fields are the columns of a table (Block Kit has no table in a modal, and no chart: an image
block would need the numbers drawn and hosted elsewhere). The numbers are computed when the admin
clicks, not on every refresh of the Home.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    MarkdownTextObject,
    SectionBlock,
)
from slack_sdk.models.views import View

from memory import ApprovalAnalytics, DecisionStats

from .mrkdwn import escape
from .translator import Translator

APPROVAL_ANALYTICS = "approval_analytics"
"""The button in an admin's App Home that opens the analytics."""
ANALYTICS_CALLBACK = "approval_analytics_modal"
ROWS_LIMIT = 20
"""Tools, and people, shown at most (a modal holds 100 blocks); the command line shows every one."""


def analytics_button(tr: Translator) -> ActionsBlock:
    """The admin's way to the analytics, in the Home's tool policies section."""
    text = tr.gettext("Approval analytics")
    return ActionsBlock(
        block_id="home_analytics", elements=[ButtonElement(text=text, action_id=APPROVAL_ANALYTICS, value="open")]
    )


def seconds_text(seconds: float | None, tr: Translator) -> str:
    """A time to decision: "4 s", "2.5 s", "3 min 20 s", "2 h 5 min"; "–" for none."""
    if seconds is None:
        return "–"
    if seconds < 60:
        return tr.gettext("{n} s", n=f"{round(seconds, 1):g}")
    whole = round(seconds)
    if whole < 3600:
        minutes, rest = divmod(whole, 60)
        return tr.gettext("{minutes} min {seconds} s", minutes=minutes, seconds=rest)
    hours, rest = divmod(whole, 3600)
    return tr.gettext("{hours} h {minutes} min", hours=hours, minutes=rest // 60)


def stats_fields(stats: DecisionStats, tr: Translator) -> list[MarkdownTextObject]:
    """The columns of one row, each as "*Name*\\nvalue" (Slack lays section fields out two a line)."""
    times = tr.gettext("p50 {p50} · p95 {p95}", p50=seconds_text(stats.p50, tr), p95=seconds_text(stats.p95, tr))
    cells = [
        (tr.gettext("Waiting"), str(stats.waiting)),
        (tr.gettext("Decided"), str(stats.decided)),
        (tr.gettext("Time to decision"), times),
        (tr.gettext("Quick approvals"), str(stats.quick)),
        (tr.gettext("Declined"), str(stats.declined)),
        (tr.gettext("Expired"), str(stats.expired)),
        (tr.gettext("Cancelled"), str(stats.cancelled)),
        (tr.gettext("Undone"), str(stats.undone)),
    ]
    return [MarkdownTextObject(text=f"*{name}*\n{value}") for name, value in cells]


def _rows(named: dict[str, DecisionStats], label: Any, tr: Translator) -> list[Block]:
    blocks: list[Block] = []
    for name, stats in list(named.items())[:ROWS_LIMIT]:
        blocks.append(SectionBlock(text=MarkdownTextObject(text=label(name)), fields=stats_fields(stats, tr)))
    if len(named) > ROWS_LIMIT:
        more = tr.ngettext("…and {n} more.", "…and {n} more.", len(named) - ROWS_LIMIT)
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=more)]))
    return blocks


def build_analytics_modal(analytics: ApprovalAnalytics, tr: Translator) -> dict[str, Any]:
    """The modal: a note on what the numbers mean, then one section per tool, then one per person."""
    quick = f"{analytics.quick_seconds:g}"
    note = tr.gettext(
        "Time to decision runs from the request to the decision of a person; an expiry is counted, not timed. "
        "Quick approvals came within {seconds} s of the request.",
        seconds=quick,
    )
    blocks: list[Block] = [ContextBlock(elements=[MarkdownTextObject(text=note)])]
    blocks.append(HeaderBlock(text=tr.gettext("By tool")))
    if analytics.tools:
        blocks += _rows(analytics.tools, lambda name: f"*{escape(name)}*", tr)
    else:
        empty = tr.gettext("No call has waited for approval yet.")
        blocks.append(ContextBlock(elements=[MarkdownTextObject(text=empty)]))
    if analytics.people:
        blocks.append(DividerBlock())
        blocks.append(HeaderBlock(text=tr.gettext("By person")))
        blocks += _rows(analytics.people, lambda user: f"<@{user}>", tr)
    return View(
        type="modal",
        callback_id=ANALYTICS_CALLBACK,
        title=tr.gettext("Approval analytics")[:24],
        close=tr.gettext("Close"),
        blocks=blocks,
    ).to_dict()


__all__ = ["APPROVAL_ANALYTICS", "analytics_button", "build_analytics_modal", "seconds_text", "stats_fields"]
