"""Persistence for the agent runtime: `Storage` (the database), `Memory` (thread history), runs and tool
calls, tool policies and the audit trail.

Imports nothing from `bot`; the runtime imports this package.
"""

from ._audit import SYSTEM, AuditAction, AuditEntry, AuditLog, AuditVia
from ._memory import Memory
from ._policies import PolicyChange, PolicyError, PolicyMode, PolicyStore, ToolPolicy
from ._runs import RunStore, ThreadOwnerError
from ._storage import Storage
from .states import RunStatus, ToolCallState

__all__ = [
    "SYSTEM",
    "AuditAction",
    "AuditEntry",
    "AuditLog",
    "AuditVia",
    "Memory",
    "PolicyChange",
    "PolicyError",
    "PolicyMode",
    "PolicyStore",
    "RunStatus",
    "RunStore",
    "Storage",
    "ThreadOwnerError",
    "ToolCallState",
    "ToolPolicy",
]
