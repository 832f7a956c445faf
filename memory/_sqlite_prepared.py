"""A prebuilt write on SQLite run from its compiled form: SQLAlchemy's SQL, parameters and defaults, without
its execution of a statement around them.

A write of the runtime's path (`dialects.Prepared`: a statement built once, run with its parameters) cost
about 0.1 ms of CPU in SQLAlchemy beyond the driver's hand-off: a greenlet, the compiled cache's lookup, an
execution context, a cursor, a result. Here the statement is compiled once per set of parameter names, as
SQLAlchemy compiles it for an execution, and each run only turns the parameters into the driver's (the
compiled form's own bind values, the columns' Python-side defaults and its bind processors: what SQLAlchemy
does for it) before the one hand-off of `memory._sqlite_driver`; the writes of `Dialect.together` go in one
hand-off for all of them. A driver's error is raised as SQLAlchemy raises it (`sqlalchemy.exc.IntegrityError`
and the like, the driver's error as `orig`, the statement that failed as `statement`).

Only where it changes nothing else: a write inside a transaction (`Storage.transaction`, `Storage.statement`),
on a connection of `memory._sqlite_driver`, with no one listening to its statements (`before_cursor_execute`,
the tests' `statements_of`) and no echo; with RETURNING only for one row and columns the driver gives as they
are (a new row's integer key), and never among the writes sent together; and from its second run on, so a
statement built for one call is left to SQLAlchemy's cache. Anything else runs through SQLAlchemy as before.
"""

from __future__ import annotations

import sqlite3
import weakref
from collections.abc import Callable
from typing import Any

from sqlalchemy.exc import DBAPIError
from sqlalchemy.ext.asyncio import AsyncConnection

from ._sqlite_driver import _Connection

_Default = tuple[str, Any, bool]
"""A column's Python-side default: (its parameter's name, the value or the function, whether a function)."""


class Ran:
    """The outcome of a write run here: as much of SQLAlchemy's result as the runtime reads of a write (the rows
    a RETURNING gave, as tuples)."""

    __slots__ = ("rowcount", "rows", "returns_rows")

    def __init__(self, rowcount: int, rows: list[tuple[Any, ...]] | None = None):
        self.rowcount = rowcount
        self.rows = rows or []
        self.returns_rows = rows is not None

    def all(self) -> list[tuple[Any, ...]]:
        return self.rows


class _Compiled:
    """A statement compiled for one set of parameter names: its SQL, the order of its parameters with their
    processors, and the defaults of the columns the parameters leave out."""

    __slots__ = ("sql", "compiled", "positions", "defaults", "returning")

    def __init__(self, compiled: Any, defaults: list[_Default]):
        self.sql: str = compiled.string
        self.compiled = compiled
        self.returning = bool(compiled.effective_returning)
        """Whether it returns rows (one row's columns, which need no processing: `_compiled`)."""
        processors = compiled._bind_processors
        self.positions: list[tuple[str, Callable[[Any], Any] | None]] = [
            (name, processors.get(name)) for name in compiled.positiontup
        ]
        self.defaults = defaults

    def parameters(self, values: dict[str, Any]) -> tuple[Any, ...]:
        """The driver's parameters for `values`, as SQLAlchemy makes them."""
        bound = self.compiled.construct_params(values, escape_names=False)
        for name, default, call in self.defaults:
            bound[name] = default(_DefaultContext(bound)) if call else default
        return tuple(bound[name] if process is None else process(bound[name]) for name, process in self.positions)


class _DefaultContext:
    """What a column's default function is given (SQLAlchemy gives its execution context): the parameters."""

    __slots__ = ("current_parameters",)

    def __init__(self, parameters: dict[str, Any]):
        self.current_parameters = parameters

    def get_current_parameters(self, isolate_multiinsert_groups: bool = True) -> dict[str, Any]:
        return self.current_parameters


_SEEN: weakref.WeakKeyDictionary[Any, dict[tuple[type, frozenset[str], bool], _Compiled | None]] = (
    weakref.WeakKeyDictionary()
)
"""Per statement (while it lives): its compiled forms by (dialect class, parameter names, executemany); None
for a form SQLAlchemy runs itself. A statement seen once has no entry yet."""
_ONCE: weakref.WeakSet[Any] = weakref.WeakSet()
"""Statements run once so far (through SQLAlchemy)."""


def _compiled(statement: Any, dialect: Any, names: frozenset[str], many: bool) -> _Compiled | None:
    """`statement` compiled for `names`, or None when it takes more than this module does."""
    compiled = statement.compile(dialect=dialect, column_keys=sorted(names), for_executemany=many)
    if (
        not compiled.positional
        or (compiled.effective_returning and (many or not _returned_as_is(compiled, dialect)))
        or compiled.escaped_bind_names
        or compiled.literal_execute_params
        or compiled.post_compile_params
        or compiled.schema_translate_map
        or getattr(compiled, "_insertmanyvalues", None) is not None
    ):
        return None
    prefetch, description = (
        (compiled.insert_prefetch, "_default_description_tuple")
        if compiled.insert_prefetch
        else (compiled.update_prefetch, "_onupdate_description_tuple")
    )
    key_of = compiled._within_exec_param_key_getter
    defaults: list[_Default] = []
    for column in prefetch:
        value, is_scalar, is_callable, is_sentinel = getattr(column, description)
        if is_sentinel or not (is_scalar or is_callable):
            return None
        defaults.append((key_of(column), value, bool(is_callable)))
    return _Compiled(compiled, defaults)


def _returned_as_is(compiled: Any, dialect: Any) -> bool:
    """Whether every column the statement returns comes from the driver as SQLAlchemy would give it (no result
    processor, as for an integer key)."""
    return all(entry.type._cached_result_processor(dialect, None) is None for entry in compiled._result_columns)


def _ready(
    connection: AsyncConnection, statement: Any, parameters: Any, *, running: bool = True
) -> tuple[_Connection, _Compiled] | None:
    """The driver's connection and the compiled form to run the write `statement` with `parameters` here, or None
    for SQLAlchemy to run it (see the module's docstring). `running=False`: only asking, so a statement not seen
    before is not counted as run once."""
    sync = connection.sync_connection
    if sync is None or not sync.in_transaction() or sync._echo:
        return None
    adapt = sync.connection.dbapi_connection
    if not isinstance(adapt, _Connection):
        return None
    if sync.dispatch.before_cursor_execute or sync.dispatch.after_cursor_execute:
        return None
    many = isinstance(parameters, list)
    if many and not parameters:
        return None
    names = frozenset(parameters[0] if many else parameters)
    if many and any(frozenset(row) != names for row in parameters):
        return None
    forms = _SEEN.get(statement)
    if forms is None:
        if statement not in _ONCE:  # a statement built for one call: SQLAlchemy's cache finds it or compiles it
            if running:
                _ONCE.add(statement)
            return None
        forms = _SEEN[statement] = {}
    dialect = sync.dialect
    key = (type(dialect), names, many)
    if key in forms:
        form = forms[key]
    else:
        form = forms[key] = _compiled(statement, dialect, names, many)
    return None if form is None else (adapt, form)


def _driver_parameters(form: _Compiled, parameters: Any) -> Any:
    return [form.parameters(row) for row in parameters] if isinstance(parameters, list) else form.parameters(parameters)


async def run_prepared(connection: AsyncConnection, statement: Any, parameters: Any) -> Ran | None:
    """Run the write `statement` with `parameters` (a dict; a list of them: executemany) here, or return None
    for SQLAlchemy to run it (see the module's docstring)."""
    ready = _ready(connection, statement, parameters)
    if ready is None:
        return None
    adapt, form = ready
    driver_parameters = _driver_parameters(form, parameters)
    try:
        _description, rows, rowcount, _last = await adapt.run(
            form.sql, driver_parameters, many=isinstance(parameters, list)
        )
    except sqlite3.Error as exc:
        raise _error(form, driver_parameters, exc) from exc
    return Ran(rowcount, list(rows) if form.returning else None)


async def run_prepared_together(connection: AsyncConnection, writes: list[tuple[Any, Any]]) -> list[int] | None:
    """Run the writes (statement, parameters) one after the other here, in one hand-off to the driver: the rows
    each wrote. None, having run none of them, when one of them is for SQLAlchemy to run."""
    ready = [_ready(connection, statement, parameters, running=False) for statement, parameters in writes]
    found = [each for each in ready if each is not None and not each[1].returning]
    if not found or len(found) != len(writes):
        return None
    adapt, forms = found[0][0], [form for _adapt, form in found]
    sent = [
        (form.sql, _driver_parameters(form, parameters), isinstance(parameters, list))
        for form, (_statement, parameters) in zip(forms, writes, strict=True)
    ]
    counts, failed, error = await adapt.run_writes(sent)
    if failed is not None and error is not None:
        raise _error(forms[failed], sent[failed][1], error) from error
    return counts


def _error(form: _Compiled, driver_parameters: Any, exc: sqlite3.Error) -> Exception:
    """The driver's error `exc` as SQLAlchemy raises it (`IntegrityError` and the like, `exc` as `orig`)."""
    return DBAPIError.instance(form.sql, driver_parameters, exc, sqlite3.Error, dialect=form.compiled.dialect)
