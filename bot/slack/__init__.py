"""The Slack front end of the agent: a Bolt `AsyncApp` (`create_slack_app`) and how to serve it.

Layers: `app.py` builds the app from its dependencies; `listeners/` wires small handlers per Slack
surface (events, actions, views); they run the flows in `conversation.py` (a turn in a thread),
`decisions.py` (a click on a waiting call) and `waiting_messages.py` (the messages that show waiting
calls); `*_builder.py` build Block Kit; `stores/`/`tables.py` keep the adapter's own state (one store per table);
who may act on a waiting call is the runtime's rule (`bot.agent`), asking `directory.py` about people;
`permissions.py` words its refusals. The agent runtime knows nothing of Slack.
"""

from .app import create_slack_app, create_web_client, run_slack_recovery
from .directory import Directory, DirectoryError
from .server import build_web_app, serve_http, serve_socket, stop_turns_left
from .services import SlackServices
from .stores import SlackStores
from .threads import SlackThread
from .waiting_messages import refresh_tool_call_messages

__all__ = [
    "Directory",
    "DirectoryError",
    "SlackServices",
    "SlackStores",
    "SlackThread",
    "build_web_app",
    "create_slack_app",
    "create_web_client",
    "refresh_tool_call_messages",
    "run_slack_recovery",
    "serve_http",
    "serve_socket",
    "stop_turns_left",
]
