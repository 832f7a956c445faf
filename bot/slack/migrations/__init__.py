"""The Slack adapter's tables' migrations (`bot/slack/tables.py`), in `versions/`.

`Storage.migrate(SCHEMA)` applies them; the adapter's store does so before it first touches a table.
"""

from pathlib import Path

from memory.schema import Schema

from ..tables import SlackTable

SCHEMA = Schema("slack", Path(__file__).parent / "versions", SlackTable.metadata)
