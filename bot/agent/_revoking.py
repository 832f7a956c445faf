"""Ending a standing grant, held to the one rule (`_authorize`, `Action.REVOKE`): its granter or an admin
may end it. The outcome is one typed value, like a decision's (`_results`), so that the Home and the HTTP
API render it and none checks who may on its own."""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Protocol

from memory import Grant, Storage

from ._authorize import Action, Asked, Directory, authorize
from ._results import Refused

log = logging.getLogger(__name__)


@dataclass(frozen=True, kw_only=True)
class Revoked:
    """The grant ended now (audited `grant_revoked`): the very next proposed call no longer finds it."""

    grant: Grant


@dataclass(frozen=True, kw_only=True)
class GrantEnded:
    """The grant had already ended (revoked, or past its end): nothing changed."""

    grant: Grant


@dataclass(frozen=True, kw_only=True)
class NoGrant:
    """No such grant of this agent."""

    grant_id: str


RevokeResult = Revoked | GrantEnded | Refused | NoGrant


class RevokingAgent(Protocol):
    """What revoking needs of `Agent` (a protocol, so this module does not import `_agent`)."""

    @property
    def id(self) -> str: ...

    @property
    def storage(self) -> Storage: ...

    @property
    def directory(self) -> Directory: ...


async def revoke_grant(agent: RevokingAgent, grant_id: str, *, actor: str | None, via: str) -> RevokeResult:
    """End the standing grant `grant_id` for `actor`, if the rule lets them (its granter, or an admin); a
    refusal is audited `refused` with its reason, on the call whose approval gave the grant."""
    grants = agent.storage.grants
    grant = await grants.get(grant_id) if grant_id else None
    if grant is None or grant.agent_id != agent.id:
        return NoGrant(grant_id=grant_id)
    policy = await agent.storage.policies.get(grant.tool_name)
    asked = Asked(
        actor=actor, action=Action.REVOKE, tool_name=grant.tool_name, requester=grant.granted_by,
        thread_id=grant.thread_id,
    )  # fmt: skip
    refusal = await authorize(asked, policy, agent.directory)
    if refusal is not None:
        try:
            await agent.storage.audit_log.record(
                run_id=grant.run_id, tool_call_id=grant.tool_call_id, tool_name=grant.tool_name, action="refused",
                actor=actor, via=via, args_fingerprint=grant.args_fingerprint, policy_version=policy.version,
                detail=f"{Action.REVOKE} grant {grant.id}: {refusal.text()}"[:500],
            )  # fmt: skip
        except Exception:  # noqa: BLE001 - the refusal stands whether or not its line could be written
            log.exception("could not audit the refused revoke of grant %s", grant.id)
        return Refused(refusal=refusal)
    revoked = await grants.revoke(grant.id, by=actor, via=via)
    return Revoked(grant=revoked) if revoked is not None else GrantEnded(grant=grant)


__all__ = ["GrantEnded", "NoGrant", "RevokeResult", "Revoked", "revoke_grant"]
