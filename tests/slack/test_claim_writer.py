"""The batched claims of the ack path (`ClaimWriter`): written on a loop of their own, in another thread, and
answered on the claimant's loop; a claimant that gave up still hears whether its claim won."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from bot.slack.stores import ClaimWriter


@asynccontextmanager
async def loop_in_a_thread() -> AsyncIterator[asyncio.AbstractEventLoop]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="writer")
    thread.start()
    try:
        yield loop
    finally:
        loop.call_soon_threadsafe(loop.stop)
        await asyncio.to_thread(thread.join)
        loop.close()


async def test_claims_are_written_on_the_writers_loop_and_answered_on_the_claimants():
    writes: list[tuple[str, list[str]]] = []
    stored: set[str] = {"Ev0"}

    async def write(batch: list[dict[str, Any]]) -> set[str]:
        writes.append((threading.current_thread().name, [values["event_id"] for values in batch]))
        await asyncio.sleep(0.01)
        inserted = {values["event_id"] for values in batch} - stored
        stored.update(inserted)
        return inserted

    async with loop_in_a_thread() as loop:
        writer = ClaimWriter(write, loop=loop)
        claims = ["Ev0", "Ev1", "Ev2", "Ev1", "Ev3"]
        held = threading.Event()  # the writer's loop held until every claim waits: they come together
        loop.call_soon_threadsafe(held.wait, 5)
        futures = [writer.claim({"event_id": event_id}) for event_id in claims]
        held.set()
        assert await asyncio.gather(*futures) == [
            False, True, True, False, True,
        ]  # fmt: skip
        assert await writer.claim({"event_id": "Ev4"}) is True
    assert writes == [("writer", ["Ev0", "Ev1", "Ev2", "Ev3"]), ("writer", ["Ev4"])]


async def test_a_claimant_that_gave_up_hears_whether_its_claim_won():
    release = threading.Event()

    async def write(batch: list[dict[str, Any]]) -> set[str]:
        await asyncio.to_thread(release.wait, 10)
        return {values["event_id"] for values in batch}

    heard: asyncio.Future[bool] = asyncio.get_running_loop().create_future()
    async with loop_in_a_thread() as loop:
        writer = ClaimWriter(write, loop=loop)
        claimed = writer.claim({"event_id": "Ev1"}, late=heard.set_result)
        try:
            async with asyncio.timeout(0.05):
                await claimed
        except TimeoutError:
            pass
        assert claimed.cancelled()
        release.set()
        async with asyncio.timeout(5):
            assert await heard is True


async def test_old_rows_are_forgotten_between_batches_and_a_failure_to_does_not_fail_a_claim():
    done: list[str] = []

    async def write(batch: list[dict[str, Any]]) -> set[str]:
        done.append("write")
        return {values["event_id"] for values in batch}

    async def prune() -> None:
        done.append("prune")
        raise ConnectionError("the database went away")

    writer = ClaimWriter(write, prune=prune, prune_every=2)
    for event_id in ("Ev1", "Ev2", "Ev3"):
        assert await writer.claim({"event_id": event_id}) is True
    assert done == ["write", "write", "prune", "write"]
