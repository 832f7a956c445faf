"""Events API listeners: mentions start conversations, thread replies and DMs continue them."""

from slack_bolt.async_app import AsyncApp

from .app_mention import handle_app_mention
from .message import handle_message


def register(app: AsyncApp) -> None:
    app.event("app_mention")(handle_app_mention)
    app.event("message")(handle_message)
