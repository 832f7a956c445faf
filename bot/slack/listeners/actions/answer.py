"""The buttons of a question: Answer opens a form generated from the tool's resume schema; Decline (on a
live question, an MCP server's) tells the server `decline`, and its call goes on; Cancel withdraws any
question (a live one's server hears `cancel`)."""

from __future__ import annotations

from typing import Any

from slack_bolt.context.ack.async_ack import AsyncAck
from slack_bolt.context.async_context import AsyncBoltContext
from slack_sdk.web.async_client import AsyncWebClient

from bot.agent import Cancel, DeclineQuestion, Resume

from ...modal_builder import build_answer_modal
from ...translator import N_
from ._click import decide_clicked, open_clicked_form


async def handle_answer_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await open_clicked_form(
        ack, body, client, context, kind="question", action="answer",
        schema_of=lambda record: record.resume_schema,
        build=build_answer_modal,
        without_form=N_("Answer this question by replying in the thread."),
    )  # fmt: skip


async def handle_question_decline_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await _refuse_question(ack, body, client, context, cancel=False)


async def handle_question_cancel_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    await _refuse_question(ack, body, client, context, cancel=True)


async def handle_question_url_button(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext
) -> None:
    """A link button (MCP URL mode): Slack opens the page for the user; the click tells the server
    `accept` (the user went there), and the call waits for the server to finish."""
    await decide_clicked(ack, body, client, context, Resume(None), kind="question", action="answer")


async def _refuse_question(
    ack: AsyncAck, body: dict[str, Any], client: AsyncWebClient, context: AsyncBoltContext, *, cancel: bool
) -> None:
    refusal = Cancel() if cancel else DeclineQuestion()  # a live question's Cancel is its server's `cancel`
    await decide_clicked(ack, body, client, context, refusal, kind="question", action="cancel" if cancel else "answer")
