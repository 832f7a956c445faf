"""The playground's tables' migrations (`bot/playground/tables.py`), in `versions/`.

The playground applies them at start (`Storage.migrate(..., SCHEMA)`).
"""

from pathlib import Path

from memory.schema import Schema

from ..tables import PlaygroundTable

SCHEMA = Schema("playground", Path(__file__).parent / "versions", PlaygroundTable.metadata)
