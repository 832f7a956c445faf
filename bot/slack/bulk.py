"""Bulk decisions in the App Home: several waiting approvals approved or declined at once.

Each ticked approval is decided as if its own button had been clicked alone: `check_click` (the message
it names, the call still waiting, the fingerprint the user was shown, the decision rule), then
`Agent.decide` with via `home`, counted once and audited each; its thread message is updated as for a
click. The Home then says, at the top, what happened to each. The selection comes from the view's state
in the block_actions payload, which the client sends, so it is trusted no further than a button's value.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot import metrics
from bot.agent import Approve, Decision

from .decisions import ClickRefused, RefusalReason, decide_and_show, find_waiting_call, go_on
from .home_builder import BULK_PICK, read_bulk_value
from .mrkdwn import escape
from .services import SlackServices
from .tables import ToolCallMessageRow
from .translator import N_, Translator
from .waiting_messages import refresh_message

MAX_SELECTED = 50
"""At most this many ticked approvals are decided per click (the Home lists 15; more is a forged state)."""

NOTHING_SELECTED = N_("Nothing was selected: tick the requests to decide first, then press the button again.")

# What the Home's result section calls each outcome, in the order it lists them (catalog message ids).
APPROVED, DECLINED, COUNTED = N_("Approved"), N_("Declined"), N_("Approval counted, waits for more approvers")
ALREADY, NOT_ALLOWED, NOT_AS_SHOWN, FAILED = N_("Already decided"), N_("Not allowed"), N_("Not decided"), N_("Failed")
_GROUP_OF = {
    RefusalReason.ALREADY_DECIDED: ALREADY,
    RefusalReason.EXPIRED: ALREADY,
    RefusalReason.NOT_ALLOWED: NOT_ALLOWED,
    RefusalReason.NOT_AS_SHOWN: NOT_AS_SHOWN,
    RefusalReason.UNKNOWN: NOT_AS_SHOWN,
    RefusalReason.HELD_ELSEWHERE: FAILED,
}
ORDER = (APPROVED, DECLINED, COUNTED, ALREADY, NOT_ALLOWED, NOT_AS_SHOWN, FAILED)


@dataclass(frozen=True, kw_only=True)
class BulkOutcome:
    """What happened to one ticked approval."""

    group: str
    """One of `ORDER`."""
    label: str
    """The request in mrkdwn (tool and arguments), or what was ticked when it names no request."""
    why: str = ""
    """For a refusal: the explanation (mrkdwn) the clicker of a single button would have got."""


def selection_of(body: dict[str, Any]) -> list[str]:
    """The values of the ticked bulk checkboxes in a block_actions payload from the Home, once each."""
    state = (body.get("view") or {}).get("state") or body.get("state") or {}
    chosen: list[str] = []
    for actions in (state.get("values") or {}).values():
        picked = (actions or {}).get(BULK_PICK) if isinstance(actions, dict) else None
        for option in (picked or {}).get("selected_options") or []:
            value = option.get("value") if isinstance(option, dict) else None
            if isinstance(value, str) and value not in chosen:
                chosen.append(value)
    return chosen


async def decide_selected(
    services: SlackServices, client: AsyncWebClient, decision: Decision, *, user_id: str, selected: list[str]
) -> list[BulkOutcome]:
    """Decide each selected approval as if clicked alone, show the outcomes at the top of the user's Home,
    then relay the runs that go on."""
    action = "approve" if isinstance(decision, Approve) else "decline"
    tr = await services.languages.of_person(user_id)
    outcomes: list[BulkOutcome] = []
    going_on = []
    for value in selected[:MAX_SELECTED]:
        ref, fingerprint = read_bulk_value(value)
        row: ToolCallMessageRow | None = None
        try:
            call = await find_waiting_call(services, ref=ref, kind="approval", fingerprint=fingerprint)
            row = call.row
            stream = await decide_and_show(services, client, call, decision, user_id=user_id, via="home")
        except ClickRefused as refused:
            metrics.refused(refused.reason)
            if refused.row is not None:  # settled meanwhile: its message shows how, as after a click
                await _refresh(services, client, refused.row)
            outcomes.append(
                BulkOutcome(
                    group=_GROUP_OF[refused.reason],
                    label=_label(refused.about, value, tr),
                    why=tr.gettext(refused.explanation),
                )
            )
            continue
        except Exception:  # noqa: BLE001 - one failure must not keep the others undecided
            services.logger.exception("a bulk %s of %s failed", action, ref)
            why = tr.gettext("Something went wrong; try again.")
            outcomes.append(BulkOutcome(group=FAILED, label=_label(row, value, tr), why=why))
            continue
        if stream is None:
            outcomes.append(BulkOutcome(group=COUNTED, label=_label(row, value, tr)))
            continue
        outcomes.append(BulkOutcome(group=APPROVED if action == "approve" else DECLINED, label=_label(row, value, tr)))
        going_on.append(go_on(services, client, call, stream, ran=action == "approve"))
    if len(selected) > MAX_SELECTED:
        outcomes.append(
            BulkOutcome(
                group=NOT_AS_SHOWN,
                label=tr.ngettext("{n} more", "{n} more", len(selected) - MAX_SELECTED),
                why=tr.gettext("Too many at once."),
            )
        )
    if services.home is not None:
        await services.home.show_bulk_result(user_id, result_text(outcomes, tr))
    for failed in await asyncio.gather(*going_on, return_exceptions=True):
        if isinstance(failed, BaseException):
            services.logger.error("relaying a run after a bulk decision failed: %r", failed)
    return outcomes


def result_text(outcomes: list[BulkOutcome], tr: Translator) -> str:
    """The Home's result section: "*Approved 2:* … · *Already decided 1:* … · *Not allowed 1:* …", one
    group a line, each refusal with its reason; in the words of `tr` (the clicker's)."""
    if not outcomes:
        return tr.gettext(NOTHING_SELECTED)
    lines = []
    for group in ORDER:
        items = [o for o in outcomes if o.group == group]
        if items:
            shown = ", ".join(o.label + (f" ({o.why})" if o.why else "") for o in items)
            lines.append(
                tr.gettext("*{outcome} {n}:* {requests}", outcome=tr.gettext(group), n=len(items), requests=shown)
            )
    return "\n".join(lines)


def _label(row: ToolCallMessageRow | None, value: str, tr: Translator) -> str:
    if row is None:
        return tr.gettext("an unknown request ({value})", value=f"`{escape(value[:40])}`")
    args = json.dumps(row.args, ensure_ascii=False, default=str)
    args = args if len(args) <= 60 else args[:60] + "…"
    return tr.gettext(
        "{tool} {args} from {user}", tool=f"`{escape(row.tool_name)}`", args=escape(args), user=f"<@{row.requester}>"
    )


async def _refresh(services: SlackServices, client: AsyncWebClient, row: ToolCallMessageRow) -> None:
    try:
        fresh = await services.stores.messages.get(row.id)
        if fresh is not None:
            await refresh_message(services, client, fresh)
    except Exception:  # noqa: BLE001 - the outcome is said in the Home whether or not the message is fixed
        services.logger.warning("could not update the message of %s/%s", row.run_id, row.tool_call_id)
