"""A database away for longer than the storage waits for it stops a run where it was without failing it: the
stream says the run is left to recovery (`interrupted`), the run is not marked `failed`, and recovery goes on
with it once the database is back (issue 41). On a PostgreSQL server of the test's own, stopped for real."""

from __future__ import annotations

from memory import Storage
from tests.runtime.helpers import collect, make_agent, of_type, one, record_tool
from tests.support.scripted_model import reply


async def test_a_run_whose_database_stays_away_is_left_to_recovery_not_failed(postgres_cluster, model):
    storage = Storage(postgres_cluster.url, reconnect_for=0.5)
    await storage.migrate()
    agent = make_agent([record_tool("list-records", require_approval=False)], storage=storage)
    first, again = "ما زالت قاعدة البيانات غائبة", "عادت قاعدة البيانات: هذا هو الجواب."

    def stop_the_database(_body):
        postgres_cluster.stop("immediate")  # and it stays down until the test starts it
        return reply(first)

    model.chat.push(stop_the_database, reply(again))
    try:
        stream = await agent.stream("كم عدد السجلات؟")
        chunks = await collect(stream)
        error = one(chunks, "error")
        assert error.payload["interrupted"] is True
        assert "internal error" not in error.payload["message"]
        assert of_type(chunks, "finish")[-1].payload["finish_reason"] == "error"

        postgres_cluster.start()
        run = await storage.runs.get_run(stream.run_id)
        assert run.status == "running" and run.error is None  # not failed: left where it was

        streams = []
        agent.hooks["on_background_stream"] = streams.append
        assert await agent.recover_stale_runs(stale_after=0) == [stream.run_id]
        [output] = [await recovered.result() for recovered in streams]
        assert output.finish_reason == "stop" and output.text == again
        assert (await storage.runs.get_run(stream.run_id)).status == "completed"
    finally:
        await agent.model_client.close()
        await storage.close()


def test_a_commit_that_meets_the_servers_goodbye_mid_read_is_the_database_away():
    """A server shutting down sends "terminating connection" on its own; a COMMIT sent while asyncpg still reads
    that error fails with asyncpg's InternalClientError "another operation (2) is in progress" (state 2: it is
    consuming an error), which SQLAlchemy wraps. Seen in the soak at a `fast` stop, logged as a traceback: it is
    the database going away, so the storage waits it out (or, at a COMMIT, says the outcome is unknown)."""
    from asyncpg.exceptions._base import InternalClientError
    from sqlalchemy.exc import InternalError

    from memory._reconnect import database_away

    driver = InternalClientError("cannot switch to state 15; another operation (2) is in progress")
    wrapped = InternalError("COMMIT", None, driver)
    wrapped.__cause__ = driver
    assert database_away(wrapped)
    assert not database_away(InternalError("COMMIT", None, InternalClientError("some other protocol error")))
