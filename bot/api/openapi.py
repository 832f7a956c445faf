"""The OpenAPI 3.1 document of the HTTP API, served at `/api/openapi.json`."""

from __future__ import annotations

import dataclasses
from typing import Any

from memory import PolicyChange

_ERROR = {"$ref": "#/components/responses/Error"}
_GRANT = {
    "type": "object",
    "properties": {
        **{
            name: {"type": "string"} for name in ("grantId", "toolName", "threadId", "grantedBy", "runId", "toolCallId")
        },
        "sameArguments": {"type": "boolean"},
        "argsFingerprint": {"type": ["string", "null"]},
        "policyVersion": {"type": "integer"},
        "grantedAt": {"type": "string", "format": "date-time"},
        "expiresAt": {"type": "string", "format": "date-time"},
        "revokedAt": {"type": ["string", "null"], "format": "date-time"},
        "revokedBy": {"type": ["string", "null"]},
    },
}
"""A standing grant as the API shows it."""


def camel(name: str) -> str:
    """A Python field name as the API spells it: `expires_after` -> `expiresAfter`."""
    head, *rest = name.split("_")
    return head + "".join(part.title() for part in rest)


RULE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "One rule of a tool's policy; the first whose condition holds decides (see the README's Rules).",
    "properties": {
        "condition": {"type": "string", "description": "CEL over args, requester, channel, tool, now"},
        "effect": {"enum": ["allow", "require_approval", "refuse"]},
        "name": {"type": "string"},
        "approvers": {"type": "array", "items": {"type": "string"}},
        "trial": {"type": "boolean"},
    },
    "required": ["condition", "effect"],
    "additionalProperties": False,
}


def json_type(annotation: Any) -> dict[str, Any]:
    """The JSON schema of a `PolicyChange` field from its annotation (a list of strings, a boolean, a
    whole number or a string), so that a field added to `PolicyChange` appears here without more code."""
    wanted = str(annotation)
    if "ToolRule" in wanted:
        return {"type": "array", "items": RULE_SCHEMA}
    if "Iterable" in wanted or "list" in wanted or "tuple" in wanted:
        return {"type": "array", "items": {"type": "string"}}
    if "bool" in wanted:
        return {"type": "boolean"}
    if "int" in wanted or "float" in wanted:
        return {"type": "integer"}
    return {"type": "string"}


def _policy_change_schema() -> dict[str, Any]:
    properties = {camel(f.name): json_type(f.type) for f in dataclasses.fields(PolicyChange)}
    properties["actor"] = {
        "type": "string",
        "description": "Slack user ID of the admin who makes the change (must be a workspace admin); "
        "without it the token holder changes it as `system`.",
    }
    return {"type": "object", "properties": properties, "additionalProperties": False}


def _policy_schema() -> dict[str, Any]:
    properties = {camel(f.name): json_type(f.type) for f in dataclasses.fields(PolicyChange)}
    return {
        "type": "object",
        "properties": {
            "tool": {"type": "string"},
            "code": {"enum": ["always", "sometimes", "never", "unknown"]},
            **properties,
            "version": {"type": "integer"},
            "updatedBy": {"type": ["string", "null"]},
            "updatedAt": {"type": ["string", "null"], "format": "date-time"},
        },
    }


def _call_operation(summary: str, body: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {
        "summary": summary,
        "parameters": [
            {"$ref": "#/components/parameters/agentId"},
            {"$ref": "#/components/parameters/runId"},
            {"$ref": "#/components/parameters/toolCallId"},
        ],
        "requestBody": {
            "required": True,
            "content": {"application/json": {"schema": {"type": "object", "properties": body, "required": required}}},
        },
        "responses": {
            "200": {
                "description": "Decided; the run goes on (and its Slack message is updated).",
                "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Decided"}}},
            },
            "400": _ERROR,
            "401": _ERROR,
            "403": _ERROR,
            "404": _ERROR,
            "409": _ERROR,
        },
    }


_DELEGATION = {
    "type": "object",
    "properties": {
        "id": {"type": "string"},
        "delegator": {"type": "string", "description": "Whose approvals are handed over (a Slack user ID)."},
        "delegate": {"type": "string", "description": "Who decides them meanwhile."},
        "createdBy": {"type": "string"},
        "startsAt": {"type": "string", "format": "date-time"},
        "endsAt": {"type": "string", "format": "date-time"},
        "endedAt": {"type": ["string", "null"], "format": "date-time"},
        "endedBy": {"type": ["string", "null"]},
    },
}


def _delegation_paths() -> dict[str, Any]:
    one = {"type": "object", "properties": {"status": {"type": "string"}, "delegation": _DELEGATION}}
    answer = {"description": "Done.", "content": {"application/json": {"schema": one}}}
    person = {"type": "string", "description": "A Slack user ID."}

    def body(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
        schema = {"type": "object", "properties": properties, "required": required}
        return {"required": True, "content": {"application/json": {"schema": schema}}}

    errors = {code: _ERROR for code in ("400", "401", "403", "404", "409")}
    listed = {"type": "object", "properties": {"delegations": {"type": "array", "items": _DELEGATION}}}
    return {
        "/api/delegations": {
            "get": {
                "summary": "Every delegation in force, soonest to end first (`person`: those one person gave or holds)",
                "parameters": [{"name": "person", "in": "query", "schema": {"type": "string"}}],
                "responses": {
                    "200": {"description": "In force.", "content": {"application/json": {"schema": listed}}},
                    "401": _ERROR,
                },
            },
            "post": {
                "summary": "Hand the delegator's approvals to the delegate until a time (by the delegator, or an "
                "admin as `actor`); audited delegated",
                "requestBody": body(
                    {
                        "delegator": person,
                        "delegate": person,
                        "until": {"type": "string", "description": "An ISO time or date (its end, UTC), or 3d, 8h."},
                        "actor": person,
                    },
                    ["delegator", "delegate", "until"],
                ),
                "responses": {"200": answer, **errors},
            },
        },
        "/api/delegations/{delegationId}/end": {
            "post": {
                "summary": "End a delegation now (by its delegator, its delegate or an admin); audited "
                "delegation_ended",
                "parameters": [{"name": "delegationId", "in": "path", "required": True, "schema": {"type": "string"}}],
                "requestBody": body({"endedBy": person}, ["endedBy"]),
                "responses": {"200": answer, **errors},
            }
        },
    }


def openapi_document() -> dict[str, Any]:
    approver = {"type": "string", "description": "Slack user ID of who decides; the tool's policy is applied to it."}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "Approval bot API",
            "version": "1",
            "description": "Suspended runs of the bot's agent, and decisions about their waiting tool calls.",
        },
        "security": [{"bearer": []}],
        "paths": {
            "/api/agents/{agentId}/suspended-runs": {
                "get": {
                    "summary": "Runs that wait for a decision or for resume data, newest first",
                    "parameters": [
                        {"$ref": "#/components/parameters/agentId"},
                        {"name": "threadId", "in": "query", "schema": {"type": "string"}},
                        {"name": "resourceId", "in": "query", "schema": {"type": "string"}},
                        {
                            "name": "viewer",
                            "in": "query",
                            "description": "A Slack user ID: each call's `actions` are those the rule allows this "
                            "person (without it: those someone may take)",
                            "schema": {"type": "string"},
                        },
                        {"name": "page", "in": "query", "schema": {"type": "integer", "minimum": 0, "default": 0}},
                        {
                            "name": "perPage",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50},
                        },
                    ],
                    "responses": {
                        "200": {
                            "description": "A page of suspended runs.",
                            "content": {
                                "application/json": {"schema": {"$ref": "#/components/schemas/SuspendedRunsPage"}}
                            },
                        },
                        "400": _ERROR,
                        "401": _ERROR,
                        "404": _ERROR,
                    },
                }
            },
            "/api/agents/{agentId}/runs/{runId}/tool-calls/{toolCallId}/approve": {
                "post": _call_operation(
                    "Approve a waiting call; with `grant`, also allow later calls of its tool in its thread without "
                    "asking for the policy's `grantSeconds` (a standing grant; 403 when the policy allows none)",
                    {
                        "approver": approver,
                        "grant": {
                            "oneOf": [
                                {"type": "boolean"},
                                {
                                    "type": "object",
                                    "additionalProperties": False,
                                    "properties": {
                                        "sameArguments": {"type": "boolean"},
                                        "seconds": {"type": "integer", "minimum": 1},
                                    },
                                },
                            ]
                        },
                    },
                    ["approver"],
                )
            },
            "/api/agents/{agentId}/grants": {
                "get": {
                    "summary": "The agent's live standing grants, soonest to end first",
                    "parameters": [
                        {"$ref": "#/components/parameters/agentId"},
                        {"name": "grantedBy", "in": "query", "schema": {"type": "string"}},
                    ],
                    "responses": {
                        "200": {
                            "description": "The live grants",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {"grants": {"type": "array", "items": _GRANT}},
                                    }
                                }
                            },
                        },
                        "401": _ERROR,
                        "404": _ERROR,
                    },
                }
            },
            "/api/agents/{agentId}/grants/{grantId}/revoke": {
                "post": {
                    "summary": "End a live standing grant now (by its granter or an admin); audited grant_revoked",
                    "parameters": [
                        {"$ref": "#/components/parameters/agentId"},
                        {"name": "grantId", "in": "path", "required": True, "schema": {"type": "string"}},
                    ],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["revokedBy"],
                                    "properties": {"revokedBy": approver},
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "Revoked",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {"status": {"const": "revoked"}, "grant": _GRANT},
                                    }
                                }
                            },
                        },
                        "400": _ERROR,
                        "401": _ERROR,
                        "403": _ERROR,
                        "404": _ERROR,
                        "409": _ERROR,
                    },
                }
            },
            "/api/agents/{agentId}/runs/{runId}/tool-calls/{toolCallId}/decline": {
                "post": _call_operation(
                    "Decline a waiting call; the model hears the reason",
                    {"approver": approver, "reason": {"type": "string"}},
                    ["approver"],
                )
            },
            "/api/agents/{agentId}/runs/{runId}/tool-calls/{toolCallId}/cancel": {
                "post": _call_operation(
                    "Cancel a waiting call (approval or question): it never runs and the model hears it was "
                    "cancelled, not declined; whoever may decide it, or an admin, may; audited cancelled",
                    {"actor": approver, "reason": {"type": "string"}},
                    ["actor"],
                )
            },
            "/api/agents/{agentId}/runs/{runId}/tool-calls/{toolCallId}/resume": {
                "post": _call_operation(
                    "Resume a call that suspended itself, with data that fits its resume schema; a live "
                    "question (an MCP server's) may instead be declined or cancelled with `action`",
                    {
                        "resumeData": {},
                        "resumedBy": {"type": "string"},
                        "action": {"enum": ["accept", "decline", "cancel"]},
                    },
                    [],
                )
            },
            "/api/agents/{agentId}/decisions": {
                "post": {
                    "summary": "Several decisions by one approver, each made as if asked alone (its own policy "
                    "check, counted once, audited each); one result per item, in order",
                    "parameters": [{"$ref": "#/components/parameters/agentId"}],
                    "requestBody": {
                        "required": True,
                        "content": {
                            "application/json": {
                                "schema": {
                                    "type": "object",
                                    "required": ["approver", "decisions"],
                                    "properties": {
                                        "approver": approver,
                                        "decisions": {
                                            "type": "array",
                                            "minItems": 1,
                                            "maxItems": 100,
                                            "items": {
                                                "type": "object",
                                                "required": ["runId", "toolCallId", "action"],
                                                "additionalProperties": False,
                                                "properties": {
                                                    "runId": {"type": "string"},
                                                    "toolCallId": {"type": "string"},
                                                    "action": {"enum": ["approve", "decline"]},
                                                    "reason": {"type": "string"},
                                                },
                                            },
                                        },
                                    },
                                }
                            }
                        },
                    },
                    "responses": {
                        "200": {
                            "description": "Each item's result: `status` (as the single routes answer) or "
                            "`error`, with `code` the HTTP status the item would have had alone.",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "results": {
                                                "type": "array",
                                                "items": {
                                                    "type": "object",
                                                    "properties": {
                                                        "runId": {"type": "string"},
                                                        "toolCallId": {"type": "string"},
                                                        "status": {"enum": ["approved", "declined", "waiting"]},
                                                        "error": {"type": "string"},
                                                        "code": {"type": "integer"},
                                                    },
                                                },
                                            }
                                        },
                                    }
                                }
                            },
                        },
                        "400": _ERROR,
                        "401": _ERROR,
                        "404": _ERROR,
                    },
                }
            },
            "/api/policies": {
                "get": {
                    "summary": "Every tool of the agent (and every tool with a stored policy), with its policy",
                    "responses": {
                        "200": {
                            "description": "The policies, by tool name.",
                            "content": {
                                "application/json": {
                                    "schema": {
                                        "type": "object",
                                        "properties": {
                                            "policies": {
                                                "type": "array",
                                                "items": {"$ref": "#/components/schemas/Policy"},
                                            }
                                        },
                                    }
                                }
                            },
                        },
                        "401": _ERROR,
                    },
                }
            },
            "/api/policies/{tool}": {
                "patch": {
                    "summary": "Change one tool's policy (the fields given; the others are kept); audited as "
                    "policy_changed via api",
                    "parameters": [{"name": "tool", "in": "path", "required": True, "schema": {"type": "string"}}],
                    "requestBody": {
                        "required": True,
                        "content": {"application/json": {"schema": {"$ref": "#/components/schemas/PolicyChange"}}},
                    },
                    "responses": {
                        "200": {
                            "description": "The new policy.",
                            "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Policy"}}},
                        },
                        "400": _ERROR,
                        "401": _ERROR,
                        "403": _ERROR,
                    },
                }
            },
            **_delegation_paths(),
        },
        "components": {
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer", "description": "BOT_API_TOKEN"}},
            "parameters": {
                name: {"name": name, "in": "path", "required": True, "schema": {"type": "string"}}
                for name in ("agentId", "runId", "toolCallId")
            },
            "responses": {
                "Error": {
                    "description": "What went wrong.",
                    "content": {
                        "application/json": {
                            "schema": {
                                "type": "object",
                                "properties": {"error": {"type": "string"}},
                                "required": ["error"],
                            }
                        }
                    },
                }
            },
            "schemas": {
                "Policy": _policy_schema(),
                "PolicyChange": _policy_change_schema(),
                "Decided": {
                    "type": "object",
                    "properties": {
                        "runId": {"type": "string"},
                        "toolCallId": {"type": "string"},
                        "status": {"enum": ["approved", "declined", "resumed", "cancelled"]},
                    },
                },
                "SuspendedRunsPage": {
                    "type": "object",
                    "properties": {
                        "runs": {"type": "array", "items": {"$ref": "#/components/schemas/SuspendedRun"}},
                        "total": {"type": "integer"},
                        "totalExact": {"type": "boolean"},
                    },
                },
                "SuspendedRun": {
                    "type": "object",
                    "properties": {
                        "runId": {"type": "string"},
                        "status": {"const": "suspended"},
                        "threadId": {"type": ["string", "null"]},
                        "resourceId": {"type": ["string", "null"]},
                        "suspendedAt": {"type": ["string", "null"], "format": "date-time"},
                        "toolCalls": {"type": "array", "items": {"$ref": "#/components/schemas/SuspendedToolCall"}},
                    },
                },
                "SuspendedToolCall": {
                    "type": "object",
                    "properties": {
                        "toolCallId": {"type": "string"},
                        "toolName": {"type": "string"},
                        "args": {},
                        "requiresApproval": {"type": "boolean"},
                        "suspendPayload": {},
                        "rule": {
                            "description": "The admin's rule that made the call wait, in one line "
                            "(e.g. rule 1: Needs finance: args.amount > 100.0); null when no rule decided",
                            "type": ["string", "null"],
                        },
                        "escalatedAt": {
                            "description": "When the waiting approval was escalated to its policy's escalate_to; "
                            "null when it was not",
                            "type": ["string", "null"],
                            "format": "date-time",
                        },
                        "preview": {
                            "description": "What the tool's dry run said before the approval was shown; "
                            "null when the tool has no preview",
                            "type": ["object", "null"],
                            "properties": {
                                "ok": {"type": "boolean"},
                                "result": {},
                                "error": {"type": ["string", "null"]},
                            },
                        },
                        "requester": {
                            "description": "Whose request led to the call (a Slack user ID)",
                            "type": ["string", "null"],
                        },
                        "approvals": {
                            "description": "Who approved it so far, in order (several approvals required)",
                            "type": "array",
                            "items": {"type": "string"},
                        },
                        "approvalsRequired": {"type": "integer", "minimum": 1},
                        "deciders": {
                            "description": "Who may decide it (user and user-group IDs); empty: anyone in the "
                            "conversation",
                            "type": "array",
                            "items": {"type": "string"},
                        },
                        "answerers": {
                            "description": "A question: who may answer it (the requester and the tool's approvers)",
                            "type": "array",
                            "items": {"type": "string"},
                        },
                        "expiresAt": {
                            "description": "When a waiting approval is declined as expired; null: never",
                            "type": ["string", "null"],
                            "format": "date-time",
                        },
                        "grantSeconds": {
                            "description": "The longest standing grant an approval may give; null: none on offer",
                            "type": ["integer", "null"],
                        },
                        "actions": {
                            "description": "What the rule allows the `viewer` (or someone) to do to the call: "
                            "approve, decline, edit_args, grant, answer, cancel",
                            "type": "array",
                            "items": {"enum": ["approve", "decline", "edit_args", "grant", "answer", "cancel"]},
                        },
                    },
                },
            },
        },
    }
