"""Block Kit for delegation in the App Home: who decides for you (or for whom you decide) while someone is
away, each with an End button; a button that opens the form to hand your approvals over until a time; and,
for an admin, every delegation in force. Pure functions of small dataclasses and the reader's `Translator`.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from slack_sdk.models.blocks import (
    Block,
    ButtonElement,
    ContextBlock,
    DividerBlock,
    InputBlock,
    MarkdownTextObject,
    PlainTextInputElement,
    SectionBlock,
    UserSelectElement,
)
from slack_sdk.models.views import View

from .mrkdwn import slack_date
from .translator import Translator

HAND_OVER = "delegation_open"
"""The button that opens the delegation form."""
END_DELEGATION = "delegation_end"
"""The End button next to a delegation (its value: the delegation's id)."""
DELEGATION_CALLBACK = "delegation_modal"
DELEGATE_BLOCK, DELEGATE_ACTION = "delegation_delegate", "delegate"
UNTIL_BLOCK, UNTIL_ACTION = "delegation_until", "until"
DELEGATIONS_SHOWN = 20


@dataclass(frozen=True, kw_only=True)
class HomeDelegation:
    """A delegation in force, as the Home lists it."""

    id: str
    delegator: str
    delegate: str
    ends_at: datetime


def delegation_section(
    user_id: str, mine: list[HomeDelegation], every: list[HomeDelegation] | None, tr: Translator
) -> list[Block]:
    """The user's delegations (given and held) with End buttons, the button to hand their approvals over when
    they gave none, and for an admin (`every` not None) every delegation in force."""
    blocks: list[Block] = [DividerBlock(), SectionBlock(text=MarkdownTextObject(text=tr.gettext("*Away?*")))]
    for delegation in mine[:DELEGATIONS_SHOWN]:
        values = {"delegate": f"<@{delegation.delegate}>", "delegator": f"<@{delegation.delegator}>",
                  "date": slack_date(delegation.ends_at)}  # fmt: skip
        if delegation.delegator == user_id:
            text = tr.gettext(":palm_tree: {delegate} decides for you until {date}.", **values)
        else:
            text = tr.gettext(
                ":handshake: You decide for {delegator} until {date}: their requests wait for you here too.", **values
            )
        blocks.append(_with_end_button(delegation, text, tr))
    if not any(delegation.delegator == user_id for delegation in mine):
        blocks.append(
            SectionBlock(
                block_id="delegation_hand_over",
                text=MarkdownTextObject(
                    text=tr.gettext(
                        "Away for a while? Hand your approvals to someone until you are back: they decide what you "
                        "may decide, never more, and never their own requests."
                    )
                ),
                accessory=ButtonElement(text=tr.gettext("Hand over my approvals"), action_id=HAND_OVER, value="open"),
            )
        )
    if every is not None:
        blocks.append(SectionBlock(text=MarkdownTextObject(text=tr.gettext("*Delegations in force*"))))
        if not every:
            blocks.append(ContextBlock(elements=[MarkdownTextObject(text=tr.gettext("Nobody decides for anyone."))]))
        for delegation in every[:DELEGATIONS_SHOWN]:
            text = tr.gettext(
                "{delegate} decides for {delegator} until {date}",
                delegate=f"<@{delegation.delegate}>",
                delegator=f"<@{delegation.delegator}>",
                date=slack_date(delegation.ends_at),
            )
            blocks.append(_with_end_button(delegation, text, tr, block="delegation_every_"))
        if len(every) > DELEGATIONS_SHOWN:
            more = tr.ngettext("…and {n} more.", "…and {n} more.", len(every) - DELEGATIONS_SHOWN)
            blocks.append(ContextBlock(elements=[MarkdownTextObject(text=more)]))
    return blocks


def _with_end_button(delegation: HomeDelegation, text: str, tr: Translator, block: str = "delegation_") -> Block:
    return SectionBlock(
        block_id=f"{block}{delegation.id}"[:255],
        text=MarkdownTextObject(text=text),
        accessory=ButtonElement(text=tr.gettext("End"), action_id=END_DELEGATION, value=delegation.id, style="danger"),
    )


def build_delegation_modal(tr: Translator) -> dict[str, Any]:
    """The form "Hand over my approvals": who decides for you, and until when."""
    return View(
        type="modal",
        callback_id=DELEGATION_CALLBACK,
        title=tr.gettext("Hand over approvals"),
        submit=tr.gettext("Hand over"),
        close=tr.gettext("Cancel"),
        blocks=[
            SectionBlock(
                text=MarkdownTextObject(
                    text=tr.gettext(
                        "While you are away, they decide what you may decide (never more), not their own requests, "
                        "and nobody they hand theirs to decides for you. It ends by itself at the end time."
                    )
                )
            ),
            InputBlock(
                block_id=DELEGATE_BLOCK,
                label=tr.gettext("Who decides for you"),
                element=UserSelectElement(action_id=DELEGATE_ACTION),
            ),
            InputBlock(
                block_id=UNTIL_BLOCK,
                label=tr.gettext("Until"),
                hint=tr.gettext(
                    "A date (2026-12-11: to the end of that day, UTC), a time (2026-12-11T17:00+09:00), or 3d, 8h, 90m."
                ),
                element=PlainTextInputElement(action_id=UNTIL_ACTION, max_length=40),
            ),
        ],
    ).to_dict()


def read_delegation_modal(values: dict[str, Any]) -> tuple[str, str]:
    """(delegate, until) as the form's state gives them ("" for what is missing)."""
    delegate = ((values.get(DELEGATE_BLOCK) or {}).get(DELEGATE_ACTION) or {}).get("selected_user") or ""
    until = ((values.get(UNTIL_BLOCK) or {}).get(UNTIL_ACTION) or {}).get("value") or ""
    return str(delegate), str(until)


__all__ = [
    "DELEGATION_CALLBACK",
    "END_DELEGATION",
    "HAND_OVER",
    "HomeDelegation",
    "build_delegation_modal",
    "delegation_section",
    "read_delegation_modal",
]
