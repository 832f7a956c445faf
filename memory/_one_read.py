"""Several reads of different shapes in one statement: one round trip where each would be one.

`OneRead(homes=select(...), grants=select(...))` is a UNION ALL of its parts, each row tagged with the name of
its part and every other part's columns NULL (cast to their types, so each column's values come back as its
type gives them). `OneRead.rows` splits the rows again by part, each row a mapping of its own columns'
keys. The parts are read in one snapshot (one statement). Each part keeps its WHERE; an ORDER BY or LIMIT of a
part is not kept, so the caller orders what it reads.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from sqlalchemy import CompoundSelect, Select, cast, literal, null, select, union_all
from sqlalchemy.ext.asyncio import AsyncConnection

PART = "part"


class OneRead:
    """The UNION ALL of named SELECTs (see the module docstring); built once, run with `rows`."""

    def __init__(self, **parts: Select[*tuple[Any, ...]]):
        self._keys: dict[str, list[str]] = {}
        columns: list[tuple[str, str, Any]] = []  # (part, key, type)
        for name, part in parts.items():
            keys = [str(column.key) for column in part.selected_columns]
            self._keys[name] = keys
            columns += [(name, key, column.type) for key, column in zip(keys, part.selected_columns, strict=True)]
        selects = []
        for name, part in parts.items():
            own = part.subquery(name)
            selects.append(
                select(
                    literal(name).label(PART),
                    *(
                        (own.c[key] if of == name else cast(null(), kind)).label(f"{of}_{key}")
                        for of, key, kind in columns
                    ),
                )
            )
        self.statement: CompoundSelect[*tuple[Any, ...]] | Select[*tuple[Any, ...]] = (
            union_all(*selects) if len(selects) > 1 else selects[0]
        )

    async def rows(
        self, connection: AsyncConnection, parameters: Mapping[str, Any] | None = None
    ) -> dict[str, list[dict[str, Any]]]:
        """Every part's rows, by part (a part that found none: an empty list)."""
        return self.split(await connection.execute(self.statement, dict(parameters or {})))

    def split(self, found: Iterable[Any]) -> dict[str, list[dict[str, Any]]]:
        parts: dict[str, list[dict[str, Any]]] = {name: [] for name in self._keys}
        for row in found:
            values = row._mapping
            name = values[PART]
            parts[name].append({key: values[f"{name}_{key}"] for key in self._keys[name]})
        return parts


__all__ = ["OneRead"]
