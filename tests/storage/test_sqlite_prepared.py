"""Prebuilt writes on SQLite run from their compiled form (`memory/_sqlite_prepared.py`): they store what
SQLAlchemy's own execution stores (Python-side defaults, JSON, time stamps), fail as it fails, and give way to it
where someone listens to the statements."""

from __future__ import annotations

import aiosqlite
import pytest
from sqlalchemy import event, insert, select
from sqlalchemy.exc import IntegrityError

from memory import MessageTakenError, RunStatus, Storage, StoredRun, StoredToolCall, ToolCallState
from memory._run_sql import UPDATE_RUN, source_checked
from memory.dialects import Prepared
from memory.states import NextMove
from memory.tables import MessageRow, RunRow
from tests.support.rows import a_call
from tests.support.rows import a_run as a_run_record
from tests.support.statements import statements_of

RUNS, MESSAGES = RunRow.__table__, MessageRow.__table__
INSERT_RUN, INSERT_MESSAGE = insert(RUNS), insert(MESSAGES)


@pytest.fixture
async def sqlite_storage(tmp_path):
    storage = Storage(f"sqlite+aiosqlite:///{tmp_path}/prepared.db")
    await storage.migrate()
    yield storage
    await storage.close()


def a_run(run_id: str) -> dict[str, object]:
    return {"id": run_id, "agent_id": "agent", "thread_id": "スレッド", "status": "running", "max_steps": 5}


def a_message(run_id: str, text: str, source_id: str | None = None) -> dict[str, object]:
    calls = [{"id": "c1", "type": "function", "function": {"name": "delete", "arguments": '{"id": "é"}'}}]
    return {"run_id": run_id, "thread_id": "スレッド", "role": "assistant", "content": text, "tool_calls": calls,
            "source_id": source_id}  # fmt: skip


def sqlalchemy_executions(storage: Storage) -> list[str]:
    """The statements SQLAlchemy executes itself from now on (a write run from its compiled form is not one)."""
    seen: list[str] = []
    event.listen(storage.engine.sync_engine, "before_execute", lambda _c, clause, *_a: seen.append(str(clause)))
    return seen


async def written(storage: Storage, *writes: Prepared) -> list[int]:
    async with storage.statement() as connection:
        return await storage.dialect.together(connection, *writes)


async def rows(storage: Storage, table, column) -> list[dict[str, object]]:
    async with storage.read() as connection:
        found = await connection.execute(select(table).order_by(column))
        return [dict(row._mapping) for row in found]


async def test_a_write_run_from_its_compiled_form_stores_what_sqlalchemy_stores(sqlite_storage):
    storage = sqlite_storage
    # the first run of a statement is SQLAlchemy's; from the second on, the compiled form's
    assert await written(storage, Prepared(INSERT_RUN, a_run("run-1")), Prepared(INSERT_MESSAGE, a_message("run-1", "一"))) == [1, 1]  # fmt: skip
    executed = sqlalchemy_executions(storage)
    assert await written(storage, Prepared(INSERT_RUN, a_run("run-2")), Prepared(INSERT_MESSAGE, a_message("run-2", "二"))) == [1, 1]  # fmt: skip
    assert executed == []
    runs, messages = await rows(storage, RUNS, RUNS.c.id), await rows(storage, MESSAGES, MESSAGES.c.id)
    first, second = runs
    assert second["request_context"] == first["request_context"] == {}  # a default given by a function
    assert second["uses_memory"] is first["uses_memory"] is False  # a scalar default
    assert second["created_at"].tzinfo is not None and second["created_at"] >= first["created_at"]
    assert [m["content"] for m in messages] == ["一", "二"]
    assert messages[1]["tool_calls"] == messages[0]["tool_calls"] == a_message("x", "")["tool_calls"]  # JSON


async def test_an_update_run_from_its_compiled_form_counts_its_rows(sqlite_storage):
    storage = sqlite_storage
    await written(storage, Prepared(INSERT_RUN, a_run("run-1")))
    leased = Prepared(UPDATE_RUN, {"b_run": "run-1", "owner": "worker-ø"})
    assert await written(storage, leased) == [1]
    executed = sqlalchemy_executions(storage)
    assert await written(storage, leased, Prepared(UPDATE_RUN, {"b_run": "no-such-run", "owner": "x"})) == [1, 0]
    assert executed == []
    assert [run["owner"] for run in await rows(storage, RUNS, RUNS.c.id)] == ["worker-ø"]


async def test_a_write_run_from_its_compiled_form_fails_as_sqlalchemy_s_and_stores_nothing(sqlite_storage):
    storage = sqlite_storage
    await written(
        storage, Prepared(INSERT_RUN, a_run("run-1")), Prepared(INSERT_MESSAGE, a_message("run-1", "a", "m1"))
    )
    executed = sqlalchemy_executions(storage)
    taken = [{**a_message("run-1", "b", "m1"), "created_at": None}]  # the source m1 is taken in the thread
    with pytest.raises(MessageTakenError):
        async with storage.statement() as connection:
            with source_checked(taken):
                await storage.dialect.together(
                    connection,
                    Prepared(INSERT_RUN, a_run("run-2")),
                    Prepared(INSERT_MESSAGE, a_message("run-1", "b", "m1")),
                )
    with pytest.raises(IntegrityError, match="UNIQUE") as raised:
        await written(storage, Prepared(INSERT_RUN, a_run("run-1")))
    assert "UNIQUE" in str(raised.value.orig)  # the driver's error, as SQLAlchemy gives it
    assert executed == []
    assert [run["id"] for run in await rows(storage, RUNS, RUNS.c.id)] == ["run-1"]  # run-2 was rolled back


async def test_writes_are_sqlalchemy_s_while_someone_listens_to_the_statements(sqlite_storage):
    storage = sqlite_storage
    await written(storage, Prepared(INSERT_RUN, a_run("run-1")))
    await written(storage, Prepared(INSERT_RUN, a_run("run-2")))
    with statements_of(storage) as seen:
        await written(
            storage, Prepared(INSERT_RUN, a_run("run-3")), Prepared(UPDATE_RUN, {"b_run": "run-3", "step": 2})
        )
    assert [statement.split(" ")[0] for statement in seen] == ["INSERT", "UPDATE"]


async def test_the_runtime_s_moves_are_built_once_and_run_from_their_compiled_form(sqlite_storage):
    storage = sqlite_storage
    await written(storage, Prepared(INSERT_RUN, a_run("run-1")), Prepared(INSERT_RUN, a_run("run-2")))
    first, second = [await storage.runs.get_run(run_id) for run_id in ("run-1", "run-2")]
    assert first is not None and second is not None
    assert await storage.runs.move_run(
        first, "completed", from_step=0, messages=[{"role": "assistant", "content": "1"}]
    )
    executed = sqlalchemy_executions(storage)
    assert await storage.runs.move_run(
        second, "completed", from_step=0, messages=[{"role": "assistant", "content": "2"}]
    )
    assert executed == []  # the fenced move and its message: no statement built for this call


async def test_writes_together_go_to_the_driver_in_one_hand_off_and_fail_as_one(sqlite_storage, monkeypatch):
    storage = sqlite_storage
    lease = {"b_run": "run-1", "owner": "worker-ø"}
    await written(storage, Prepared(INSERT_RUN, a_run("run-1")), Prepared(INSERT_MESSAGE, a_message("run-1", "一")))
    await written(storage, Prepared(UPDATE_RUN, lease))
    handoffs: list[object] = []
    to_driver = aiosqlite.Connection._execute

    async def counted(self, function, *args, **kwargs):
        handoffs.append(function)
        return await to_driver(self, function, *args, **kwargs)

    monkeypatch.setattr(aiosqlite.Connection, "_execute", counted)
    async with storage.statement() as connection:
        writes = [Prepared(INSERT_RUN, a_run("run-2")), Prepared(INSERT_MESSAGE, a_message("run-2", "二"))]
        counts = await storage.dialect.together(connection, *writes, Prepared(UPDATE_RUN, {**lease, "b_run": "none"}))
        assert len(handoffs) == 1  # BEGIN and the three writes; the COMMIT follows
    assert counts == [1, 1, 0]
    with pytest.raises(IntegrityError, match="UNIQUE") as raised:  # run-1 is taken: the second write fails
        await written(storage, Prepared(INSERT_MESSAGE, a_message("run-2", "三")), Prepared(INSERT_RUN, a_run("run-1")))
    assert raised.value.statement is not None and raised.value.statement.startswith("INSERT INTO runs")
    assert [message["content"] for message in await rows(storage, MESSAGES, MESSAGES.c.id)] == ["一", "二"]


async def a_step_waiting(storage: Storage) -> tuple[StoredRun, StoredToolCall]:
    """A run whose worker "A" recorded a step of one call that waits for approval (its key from RETURNING), and
    parked the run (`after_work`)."""
    run = a_run_record()
    run.owner = "A"
    await storage.runs.create_run(run, [{"role": "user", "content": "delete record 3"}])
    run.step = 1
    call = a_call(run, ToolCallState.AWAITING_APPROVAL)
    await storage.runs.record_step(
        run, {"role": "assistant", "content": None, "tool_calls": [{"id": "call-1"}]}, [call]
    )
    assert await storage.runs.after_work(run, "A", holds_run=True) == NextMove.SUSPENDED
    return run, call


async def test_a_step_s_call_its_key_returned_and_the_park_and_claim_run_from_their_compiled_form(sqlite_storage):
    storage = sqlite_storage
    first_run, first_call = await a_step_waiting(storage)
    assert await storage.runs.after_work(first_run, "B", holds_run=False) == NextMove.SUSPENDED
    executed = sqlalchemy_executions(storage)
    run, call = await a_step_waiting(storage)
    # the claim of a run whose call still waits: its conditional UPDATE writes nothing (then a read says why)
    assert await storage.runs.after_work(run, "B", holds_run=False) == NextMove.SUSPENDED
    assert [statement.split(" ")[0] for statement in executed] == ["SELECT"]  # the read, no write of SQLAlchemy's
    assert call.id is not None and first_call.id is not None and call.id > first_call.id
    stored_run, stored_call = await storage.runs.run_and_call(run.id, None)
    assert (
        stored_call is not None and stored_call.id == call.id and stored_call.state == ToolCallState.AWAITING_APPROVAL
    )
    assert stored_run is not None and (stored_run.status, stored_run.owner) == (RunStatus.SUSPENDED, None)
