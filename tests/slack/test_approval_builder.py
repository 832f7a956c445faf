"""The approval message's blocks, without Slack."""

from __future__ import annotations

from datetime import UTC, datetime

from bot.slack.approval_builder import (
    ApprovalView,
    DecisionView,
    build_approval_blocks,
    build_closed_approval_blocks,
    build_decided_approval_blocks,
    format_args,
)
from bot.slack.translator import translator

EN = translator("en")


def view(**overrides) -> ApprovalView:
    base = {
        "ref": "REF123",
        "tool_name": "delete-record",
        "description": "Delete a record by ID",
        "args": {"id": 3},
        "requester": "U1",
        "request_text": "please delete record 3",
    }
    return ApprovalView(**{**base, **overrides})


def dicts(blocks):
    return [block.to_dict() for block in blocks]


def test_waiting_approval_has_the_contract_buttons_carrying_only_the_reference():
    blocks = dicts(build_approval_blocks(view(), EN))
    actions = blocks[-1]
    assert actions["type"] == "actions"
    assert [e["action_id"] for e in actions["elements"]] == [
        "tool_approve",
        "tool_decline",
        "tool_decline_with_reason",
        "tool_edit_args",
        "tool_cancel",
    ]
    assert {e["value"] for e in actions["elements"]} == {"REF123"}
    text = str(blocks)
    assert "delete-record" in text and "Delete a record by ID" in text and "<@U1>" in text
    assert "please delete record 3" in text and '"id": 3' in text


def test_arguments_are_truncated_and_cannot_escape_the_code_block():
    args = {"note": "```<!channel>" + "z" * 5000, "items": list(range(2000))}
    text = format_args(args, EN)
    assert text.startswith("```\n") and text.endswith("\n```")
    assert text.count("```") == 2 and "<!channel>" not in text and "&lt;!channel&gt;" in text
    assert len(text) < 2700 and "more characters" in text


def test_long_request_text_is_cut():
    blocks = dicts(build_approval_blocks(view(request_text="why " * 500), EN))
    assert len(blocks[-2]["elements"][0]["text"]) < 400


def test_decided_approval_has_no_buttons_and_says_who_and_when():
    at = datetime(2026, 11, 30, 10, 0, tzinfo=UTC)
    blocks = dicts(
        build_decided_approval_blocks(view(), DecisionView(approved=True, decided_by="U2", decided_at=at), EN)
    )
    assert all(block["type"] != "actions" for block in blocks)
    text = str(blocks)
    assert "Approved" in text and "<@U2>" in text and f"<!date^{int(at.timestamp())}^" in text


def test_declined_with_reason_and_edited_approval():
    declined = str(
        dicts(
            build_decided_approval_blocks(
                view(), DecisionView(approved=False, decided_by="U2", decided_at=None, reason="not <now>"), EN
            )
        )
    )
    assert "Declined" in declined and "not &lt;now&gt;" in declined
    edited = str(
        dicts(
            build_decided_approval_blocks(
                view(args={"id": 5}), DecisionView(approved=True, decided_by="U2", decided_at=None, edited=True), EN
            )
        )
    )
    assert "Approved with edited arguments" in edited and '"id": 5' in edited


def test_closed_approval_without_a_known_outcome():
    blocks = dicts(build_closed_approval_blocks(view(), "This request is no longer waiting.", EN))
    assert all(block["type"] != "actions" for block in blocks) and "no longer waiting" in str(blocks)


def test_an_interrupted_call_says_it_may_have_taken_effect_and_offers_to_run_it_again():
    blocks = dicts(build_approval_blocks(view(interrupted=True), EN))
    text = str(blocks)
    assert "Interrupted" in text and "may or may not have taken effect" in text
    actions = blocks[-1]
    assert [(e["action_id"], e["text"]["text"]) for e in actions["elements"]] == [
        ("tool_approve", "Run it again"),
        ("tool_decline", "Decline"),
        ("tool_decline_with_reason", "Decline with reason"),
        ("tool_cancel", "Cancel"),
    ]
    assert {e["value"] for e in actions["elements"]} == {"REF123"}
    assert '"id": 3' in text and "<@U1>" in text  # what would run again, and who asked


def test_an_interrupted_call_run_again_says_so_once_decided():
    decision = DecisionView(approved=True, decided_by="U2", decided_at=datetime(2026, 1, 1, tzinfo=UTC))
    text = str(dicts(build_decided_approval_blocks(view(interrupted=True), decision, EN)))
    assert "Run again" in text and "interrupted" in text and "<@U2>" in text


def test_an_expired_approval_says_why_once():
    """The hand pass showed "nobody decided in time, so it was not run." and then "(nobody decided within 30 s)"."""
    decision = DecisionView(
        approved=False, decided_by=None, decided_at=datetime(2026, 1, 1, tzinfo=UTC), expired=True,
        reason="nobody decided within 30 s",
    )  # fmt: skip
    text = str(dicts(build_decided_approval_blocks(view(), decision, EN)))
    assert "nobody decided within 30 s, so it was not run." in text and text.count("nobody decided") == 1
    decision = DecisionView(approved=False, decided_by=None, decided_at=None, expired=True)
    assert "nobody decided in time, so it was not run." in str(
        dicts(build_decided_approval_blocks(view(), decision, EN))
    )
