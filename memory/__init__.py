"""Persistence for the agent runtime: `Storage` (the database), `Memory` (thread history), runs and tool
calls, tool policies and the audit trail.

Imports nothing from `bot`; the runtime imports this package.
"""

from ._analytics import ApprovalAnalytics, DecisionStats, approval_analytics
from ._audit import SYSTEM, AuditAction, AuditEntry, AuditLog, AuditVia
from ._delegations import DELEGATION_LIMIT, EVERY_TOOL, IN_FORCE, Delegation, DelegationStore, delegation_of
from ._grants import LIVE_GRANTS_OF_AGENT, Grant, GrantStore, grant_of, new_grant_values
from ._memory import Memory, pair_tool_results
from ._one_read import OneRead
from ._policies import (
    APPROVALS_LIMIT,
    EXPIRY_LIMIT,
    GRANT_LIMIT,
    UNDO_DEFAULT,
    PolicyChange,
    PolicyMode,
    PolicyStore,
    ToolPolicy,
    UnreadablePolicy,
    approvals_count,
    escalation_seconds,
    escalation_target,
    expiry_seconds,
    grant_seconds_of,
    undo_seconds_of,
)
from ._reconnect import retried_while_away
from ._rules import RULES_LIMIT, RuleEffect, ToolRule, rule_of, rules_of
from ._run_sql import with_source_id
from ._runs import Audit, RunStore
from ._storage import Storage
from .clock import Clock, SystemClock
from .exceptions import (
    AgentError,
    CommitOutcomeUnknownError,
    DatabaseAwayError,
    DelegationError,
    MessageTakenError,
    PolicyError,
    RunTakenOverError,
    ThreadOwnerError,
    Worded,
)
from .protocols import DelegationReader, GrantReader, PolicyReader, RunStorage
from .records import CallColumns, RunColumns, StartColumns, StoredRun, StoredToolCall
from .states import RunStatus, ToolCallState

__all__ = [
    "APPROVALS_LIMIT",
    "ApprovalAnalytics",
    "DecisionStats",
    "approval_analytics",
    "EXPIRY_LIMIT",
    "GRANT_LIMIT",
    "UNDO_DEFAULT",
    "RULES_LIMIT",
    "SYSTEM",
    "AgentError",
    "Audit",
    "AuditAction",
    "AuditEntry",
    "AuditLog",
    "AuditVia",
    "CallColumns",
    "Clock",
    "CommitOutcomeUnknownError",
    "DatabaseAwayError",
    "DELEGATION_LIMIT",
    "IN_FORCE",
    "delegation_of",
    "Delegation",
    "DelegationError",
    "DelegationStore",
    "EVERY_TOOL",
    "Grant",
    "LIVE_GRANTS_OF_AGENT",
    "grant_of",
    "DelegationReader",
    "GrantReader",
    "GrantStore",
    "Memory",
    "OneRead",
    "PolicyChange",
    "PolicyError",
    "Worded",
    "PolicyMode",
    "PolicyReader",
    "PolicyStore",
    "RuleEffect",
    "RunColumns",
    "RunStatus",
    "RunStorage",
    "RunStore",
    "RunTakenOverError",
    "MessageTakenError",
    "with_source_id",
    "StartColumns",
    "Storage",
    "StoredRun",
    "StoredToolCall",
    "SystemClock",
    "ThreadOwnerError",
    "ToolCallState",
    "ToolPolicy",
    "ToolRule",
    "UnreadablePolicy",
    "approvals_count",
    "escalation_seconds",
    "escalation_target",
    "expiry_seconds",
    "grant_seconds_of",
    "undo_seconds_of",
    "new_grant_values",
    "pair_tool_results",
    "retried_while_away",
    "rule_of",
    "rules_of",
]
