"""Reading and writing runs, their messages and their tool calls: `RunStore`, the `RunStorage` the runtime
is typed against, made of one part per job (`RunMoves`: runs; `CallMoves`: tool calls; `RunQueries`:
reads; the statements they share in `memory._run_sql`).

Every change of a tool call's state goes through `transition`, a conditional UPDATE: the row moves
only if it is still in a state it may leave, and the caller learns whether it won.

The runtime's path (a run, its steps, decisions, results) is written with plain SQL statements on a
connection (`Storage.transaction`), one transaction per state transition, and read outside any write
transaction (`Storage.read`): no ORM unit of work on the way of every approval.
"""

from __future__ import annotations

from ._call_moves import CallMoves
from ._run_moves import RunMoves
from ._run_queries import RunQueries
from ._run_sql import Audit, message_of


class RunStore(RunMoves, CallMoves, RunQueries):
    """Runs, their messages and their tool calls, on SQLite or PostgreSQL (see `memory.protocols.RunStorage`)."""


__all__ = ["Audit", "RunStore", "message_of"]
