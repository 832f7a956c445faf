"""The demo agent's tables' migrations (`bot/demo/tables.py`), in `versions/`.

`Storage.migrate(SCHEMA)` applies them; the demo's tools do so before they first touch a table.
"""

from pathlib import Path

from memory.schema import Schema

from ..tables import DemoTable

SCHEMA = Schema("demo", Path(__file__).parent / "versions", DemoTable.metadata)
