"""Markdown to mrkdwn, and splitting long text."""

from __future__ import annotations

from bot.slack.mrkdwn import split_text, to_mrkdwn


def test_inline_markup_is_converted():
    assert to_mrkdwn("**bold** and *it* and ~~gone~~") == "*bold* and _it_ and ~gone~"
    assert to_mrkdwn("__bold__") == "*bold*"
    assert to_mrkdwn("see [docs](https://x.io/a?b=1)") == "see <https://x.io/a?b=1|docs>"


def test_headings_lists_and_rules():
    assert to_mrkdwn("# Title") == "*Title*"
    assert to_mrkdwn("## **Sub**") == "*Sub*"
    assert to_mrkdwn("- one\n* two\n  - nested") == "• one\n• two\n  • nested"


def test_code_is_kept_and_escaped():
    assert to_mrkdwn("`a **b**`") == "`a **b**`"
    assert to_mrkdwn("```python\nx = a < b and **c**\n```") == "```\nx = a &lt; b and **c**\n```"


def test_slack_control_sequences_are_escaped():
    assert to_mrkdwn("<!channel> & <@U1>") == "&lt;!channel&gt; &amp; &lt;@U1&gt;"


def test_split_prefers_paragraphs_and_keeps_the_limit():
    text = "\n\n".join("x" * 30 for _ in range(10))
    pieces = split_text(text, 100)
    assert all(len(p) <= 100 for p in pieces)
    assert all(p.strip("x") == "" or "\n\n" in p for p in pieces)
    assert "".join(pieces).replace("\n", "") == text.replace("\n", "")


def test_split_without_spaces_cuts_hard():
    pieces = split_text("y" * 250, 100)
    assert [len(p) for p in pieces] == [96, 96, 58]


def test_split_closes_and_reopens_a_code_block():
    text = "intro\n```\n" + "line\n" * 60 + "```\nend"
    pieces = split_text(text, 120)
    assert all(len(p) <= 120 for p in pieces)
    assert all(p.count("```") % 2 == 0 for p in pieces)
    assert pieces[1].startswith("```")
