"""The runtime's tables' migrations (threads, runs, messages, tool calls, audit), in `versions/`.

This folder also holds the Alembic environment (`env.py`, `script.py.mako`) that every package's
migrations run in; see `memory.schema`.
"""

from pathlib import Path

from memory.schema import Schema
from memory.tables import Base

SCHEMA = Schema("runtime", Path(__file__).parent / "versions", Base.metadata, version_table="alembic_version")
"""The runtime's schema; `Storage.migrate()` always applies it first."""
