"""The Slack adapter's tables' migrations (`bot/slack/tables.py`), in `versions/`.

`Storage.migrate(SCHEMA)` applies them, once when the bot starts (`stores.prepare_slack_tables`: the
command line, the playground, `build_web_app` and `serve_socket` at startup); the stores never migrate.
"""

from pathlib import Path

from memory.schema import Schema

from ..tables import SlackTable

SCHEMA = Schema("slack", Path(__file__).parent / "versions", SlackTable.metadata)
