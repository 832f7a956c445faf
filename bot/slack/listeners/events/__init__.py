"""Events API listeners: mentions start conversations, thread replies and DMs continue them; opening
the App Home tab shows it."""

from slack_bolt.async_app import AsyncApp

from .app_home_opened import handle_app_home_opened
from .app_mention import handle_app_mention
from .message import handle_message


def register(app: AsyncApp) -> None:
    app.event("app_mention")(handle_app_mention)
    app.event("message")(handle_message)
    app.event("app_home_opened")(handle_app_home_opened)
