"""Persistence for the agent runtime: `Storage` (the database), `Memory` (thread history), runs and tool calls.

Imports nothing from `bot`; the runtime imports this package.
"""

from ._memory import Memory
from ._runs import RunStore, ThreadOwnerError
from ._storage import Storage
from .states import RunStatus, ToolCallState

__all__ = ["Memory", "RunStatus", "RunStore", "Storage", "ThreadOwnerError", "ToolCallState"]
