"""The question message's blocks, without Slack."""

from __future__ import annotations

from bot.slack.modal_builder import build_question_modal
from bot.slack.question_builder import (
    AnswerView,
    QuestionView,
    build_answered_question_blocks,
    build_question_blocks,
    question_of,
    question_text,
)
from bot.slack.translator import translator

EN = translator("en")


def test_question_text_from_the_suspend_payload():
    assert question_of({"question": "Which city?"}) == "Which city?"
    assert question_of({"message": "Pick one"}) == "Pick one"
    assert question_of("Why?") == "Why?"
    assert question_of({"options": [1, 2]}) == '{"options": [1, 2]}'


def test_open_question_has_an_answer_button_with_the_reference():
    blocks = [
        b.to_dict()
        for b in build_question_blocks(
            QuestionView(
                ref="R1", tool_name="get-weather", suspend_payload={"question": "Which <city>?"}, requester="U1"
            ),
            EN,
        )
    ]
    assert blocks[-1]["elements"][0]["action_id"] == "tool_answer" and blocks[-1]["elements"][0]["value"] == "R1"
    assert "Which &lt;city&gt;?" in str(blocks) and "<@U1>" in str(blocks)


def test_answered_question_has_no_button():
    view = QuestionView(ref="R1", tool_name="get-weather", suspend_payload={"question": "Which city?"}, requester="U1")
    by_form = [
        b.to_dict()
        for b in build_answered_question_blocks(
            view, AnswerView(answered_by="U2", answered_at=None, resume_data={"city": "Oslo"}), EN
        )
    ]
    assert all(b["type"] != "actions" for b in by_form) and "<@U2>" in str(by_form) and "Oslo" in str(by_form)
    in_thread = str(
        [b.to_dict() for b in build_answered_question_blocks(view, AnswerView(answered_by=None, answered_at=None), EN)]
    )
    assert "Answered in the thread" in in_thread


def test_without_a_resume_schema_the_answer_is_given_in_the_thread_only():
    view = QuestionView(ref="R1", tool_name="t", suspend_payload="Why?", requester="U1", answerable_by_form=False)
    blocks = [b.to_dict() for b in build_question_blocks(view, EN)]
    buttons = [e["action_id"] for b in blocks if b["type"] == "actions" for e in b["elements"]]
    assert buttons == ["tool_question_cancel"] and "reply in this thread." in str(blocks)  # no form: only Cancel


def test_a_thread_answer_shows_the_values_read_from_it():
    """What the bot understood is visible at once: a "no" shows as no, not as a default."""
    view = QuestionView(ref="R1", tool_name="deploy", suspend_payload={"question": "Deploy now?"}, requester="U1")

    def shown(resume_data):
        answer = AnswerView(answered_by=None, answered_at=None, resume_data=resume_data)
        return str([b.to_dict() for b in build_answered_question_blocks(view, answer, EN)])

    assert "Answered in the thread: confirmed = no" in shown({"confirmed": False})
    assert "Answered in the thread: confirmed = yes" in shown({"confirmed": True})
    assert "Answered in the thread: city = S&lt;o&gt;, days = 3" in shown({"city": "S<o>", "days": 3})


def test_a_question_of_markup_characters_is_cut_to_what_a_section_takes_after_escaping():
    question = "<&>" * 5000 + "どの都市？"
    view = QuestionView(ref="R1", tool_name="ask", suspend_payload={"message": question}, requester="U1")
    blocks = [b.to_dict() for b in build_question_blocks(view, EN)]
    assert all(len(b["text"]["text"]) <= 3000 for b in blocks if b["type"] == "section")
    assert "Show the whole question" in blocks[0]["text"]["text"]
    assert blocks[-1]["elements"][-1]["action_id"] == "tool_full_question"
    assert len(question_text(view, EN)) < 400
    modal = build_question_modal("ask", question, EN).to_dict()
    sections = [b["text"]["text"] for b in modal["blocks"] if b["type"] == "section"]
    assert "".join(sections) == question and all(len(s) <= 3000 for s in sections)
    assert "Cut here" not in str(modal)  # all of it fits
    japanese = [b.to_dict() for b in build_question_blocks(view, translator("ja"))]
    assert "質問全体を表示" in str(japanese)  # the button in the reader's language
    short = QuestionView(ref="R1", tool_name="ask", suspend_payload={"message": "どの都市？"}, requester="U1")
    assert "tool_full_question" not in str([b.to_dict() for b in build_question_blocks(short, EN)])
