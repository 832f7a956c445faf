"""The OpenAPI 3.1 document of the HTTP API, served at `/api/openapi.json`."""

from __future__ import annotations

from typing import Any

_ERROR = {"$ref": "#/components/responses/Error"}


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
                "post": _call_operation("Approve a waiting call", {"approver": approver}, ["approver"])
            },
            "/api/agents/{agentId}/runs/{runId}/tool-calls/{toolCallId}/decline": {
                "post": _call_operation(
                    "Decline a waiting call; the model hears the reason",
                    {"approver": approver, "reason": {"type": "string"}},
                    ["approver"],
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
                    },
                },
            },
        },
    }
