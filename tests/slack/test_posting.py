"""Recognising the messages that show a call, and the Slack thread of a memory thread, without Slack."""

from __future__ import annotations

from bot.slack.approval_builder import ApprovalView, build_approval_blocks
from bot.slack.posting import carries
from bot.slack.recovery import thread_of_id
from bot.slack.threads import SlackThread
from bot.slack.translator import translator


def test_a_message_carries_the_reference_its_buttons_hold():
    blocks = [
        b.to_dict()
        for b in build_approval_blocks(ApprovalView(ref="R1", tool_name="t", args={}, requester="U"), translator("en"))
    ]
    assert carries({"blocks": blocks}, "R1")
    assert not carries({"blocks": blocks}, "R2")
    assert not carries({"text": "R1"}, "R1")  # text alone is not a button
    assert not carries({"blocks": [{"type": "section", "text": {"type": "mrkdwn", "text": "R1"}}]}, "R1")


def test_the_slack_thread_of_a_memory_thread():
    thread = SlackThread(team_id="T1", channel="C1", thread_ts="1700000000.000100")
    assert thread_of_id(thread.thread_id) == thread
    for other in (None, "", "api:abc", "slack:T1:C1", "slack:T1::1.2", "web:T1:C1:1.2"):
        assert thread_of_id(other) is None
