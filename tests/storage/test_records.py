"""Storage's records of runs and tool calls hold every column of their tables, with the same defaults."""

from __future__ import annotations

import dataclasses

import pytest

from memory import StoredRun, StoredToolCall
from memory.tables import RunRow, ToolCallRow


@pytest.mark.parametrize(("record", "row"), [(StoredRun, RunRow), (StoredToolCall, ToolCallRow)])
def test_a_record_has_a_field_for_each_column_with_its_default(record, row):
    fields = {field.name: field for field in dataclasses.fields(record)}
    columns = {column.key: column for column in row.__table__.columns}

    assert sorted(fields) == sorted(columns)
    for name, column in columns.items():
        default = fields[name].default
        if column.default is not None and column.default.is_scalar:
            assert default == column.default.arg, name
        elif fields[name].default_factory is not dataclasses.MISSING:
            assert fields[name].default_factory() == column.default.arg(None), name


def test_a_record_is_plain_data_and_shows_what_a_human_decides_about():
    call = StoredToolCall(run_id="r", tool_call_id="c", agent_id="a", step=0, position=0, tool_name="t", state="x")

    assert not hasattr(call, "__table__") and not hasattr(call, "_sa_instance_state")
    assert call.displayed_tool_name == "t"
    call.shown_tool_name, call.shown_args = "inner", {"城市": "東京"}
    assert (call.displayed_tool_name, call.displayed_args) == ("inner", {"城市": "東京"})
