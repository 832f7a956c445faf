"""The suite runs with what its collection imported (the bot, its libraries, the test modules) left out of the
garbage collector's full collections (`pytest_collection_finish` in `tests/conftest.py`), as `python -m bot
serve` runs once started: a full collection holds every thread while it walks, an ack's record too."""

from __future__ import annotations

import gc


def test_what_the_collection_imported_is_left_out_of_full_collections():
    assert gc.get_freeze_count() > 0
