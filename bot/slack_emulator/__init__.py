"""One emulation of Slack's Web API, as strict as Slack, shared by the playground and the tests.

- `Workspace`: the emulated team's state (people, user groups, channels, messages and threads,
  modals, App Home views); no HTTP.
- `SlackWebApi`: the Web API methods over a workspace (`/api/{method}`), with Slack's argument checks
  and error names; an unknown method answers `unknown_method`. Records every call, and plays the
  faults a test scripts (HTTP 429/5xx, Slack errors, delays, dropped connections).
- `SlackEmulator`: a workspace and its Web API on a loopback port of their own, for tests.
- `app_requests`: the other direction, what Slack sends an app (events, clicks, modal submissions),
  signed; the playground delivers a person's actions with it, and the tests drive a bot with it.

It imports aiohttp and slack_sdk's request signing, and nothing of the bot, so the runtime never
depends on it.
"""

from .faults import Fault
from .server import SlackEmulator
from .web_api import SlackCall, SlackError, SlackWebApi, request_params, stream_text
from .workspace import (
    APP_ID,
    BOT_ID,
    BOT_USER_ID,
    GENERAL,
    TEAM_ID,
    TEAM_NAME,
    Channel,
    Message,
    Modal,
    Person,
    UserGroup,
    Workspace,
    blocks_text,
    demo_people,
    with_block_ids,
    with_ids,
)

__all__ = [
    "APP_ID",
    "BOT_ID",
    "BOT_USER_ID",
    "GENERAL",
    "TEAM_ID",
    "TEAM_NAME",
    "Channel",
    "Fault",
    "Message",
    "Modal",
    "Person",
    "SlackCall",
    "SlackEmulator",
    "SlackError",
    "SlackWebApi",
    "UserGroup",
    "Workspace",
    "blocks_text",
    "demo_people",
    "request_params",
    "stream_text",
    "with_block_ids",
    "with_ids",
]
