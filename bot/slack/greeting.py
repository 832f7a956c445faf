"""The agent view's first hour: when someone opens the bot's DM (`app_home_opened` with `tab == "messages"`),
the bot offers suggested prompts made from the agent's tools and, in a DM with nothing in it yet, says
hello and what it can do."""

from __future__ import annotations

from typing import Any

from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

from .services import SlackServices
from .translator import Translator

PROMPTS_LIMIT = 4
"""Slack shows at most four suggested prompts."""


def suggested_prompts(agent: Any) -> list[dict[str, str]]:
    """One prompt per tool (up to four): its id as the title, a request in words as the message."""
    prompts = []
    for name, tool in list((getattr(agent, "tools", None) or {}).items())[:PROMPTS_LIMIT]:
        description = (getattr(tool, "description", "") or name).split(";")[0].strip().rstrip(".")
        prompts.append({"title": name, "message": description[:1].lower() + description[1:]})
    return prompts


def greeting_text(agent: Any, user: str, tr: Translator) -> str:
    """Hello, and what the bot can do: its words in `user`'s language; the tools' descriptions as written."""
    tools = list((getattr(agent, "tools", None) or {}).items())
    hello = tr.gettext(
        "Hi {user}! I'm {name}. I ask before anything sensitive, and show each step as I work.",
        user=f"<@{user}>",
        name=agent.name,
    )
    lines = [hello]
    lines += [f"• `{name}`: {getattr(tool, 'description', '')}" for name, tool in tools]
    return "\n".join(lines)


async def greet(services: SlackServices, client: AsyncWebClient, *, user: str, channel: str) -> None:
    """Offer the prompts in the DM `channel`; greet `user` there if the DM is empty."""
    prompts = suggested_prompts(services.agent)
    tr = await services.languages.of_person(user)
    try:
        if prompts:
            title = tr.gettext("Try one of these:")
            await client.assistant_threads_setSuggestedPrompts(channel_id=channel, title=title, prompts=prompts)
        history = await client.conversations_history(channel=channel, limit=1)
        if not history.get("messages"):
            await client.chat_postMessage(channel=channel, text=greeting_text(services.agent, user, tr))
    except SlackApiError as exc:  # a greeting is a courtesy: the DM works without it
        services.logger.info("could not greet %s in %s: %s", user, channel, exc.response.get("error"))
