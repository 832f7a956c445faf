"""The SQLAlchemy stores offer every method of the storage protocols the runtime is typed against, with
the protocol's parameters: a method renamed or reshaped on one side only fails here."""

from __future__ import annotations

import inspect

import pytest

from memory import GrantStore, PolicyStore, RunStore
from memory.protocols import GrantReader, PolicyReader, RunStorage


def methods_of(protocol: type) -> dict[str, inspect.Signature]:
    return {
        name: inspect.signature(member)
        for name, member in vars(protocol).items()
        if inspect.iscoroutinefunction(member) and not name.startswith("_")
    }


def shape(signature: inspect.Signature) -> list[tuple[str, inspect._ParameterKind, object]]:
    """Names, kinds and defaults of the parameters (annotations are the protocol's to state)."""
    return [(p.name, p.kind, p.default) for p in signature.parameters.values()]


def mismatches(protocol: type, implementation: type) -> dict[str, str]:
    """Each method of `protocol` that `implementation` lacks, or takes other parameters in."""
    found = {}
    for name, signature in methods_of(protocol).items():
        offered = getattr(implementation, name, None)
        if not inspect.iscoroutinefunction(offered):
            found[name] = "missing"
        elif shape(signature) != shape(inspect.signature(offered)):
            found[name] = f"{inspect.signature(offered)} is not {signature}"
    return found


@pytest.mark.parametrize(
    ("protocol", "implementation"), [(RunStorage, RunStore), (PolicyReader, PolicyStore), (GrantReader, GrantStore)]
)
def test_the_sqlalchemy_store_offers_every_method_of_its_protocol(protocol, implementation):
    assert methods_of(protocol)
    assert mismatches(protocol, implementation) == {}


def test_the_check_finds_a_missing_method_and_one_of_another_shape():
    class Narrow:
        async def get(self, tool_name: str, *, fresh: bool = False): ...

    found = mismatches(PolicyReader, Narrow)
    assert sorted(found) == ["get", "with_expiry"]
    assert found["with_expiry"] == "missing" and "fresh" in found["get"]
