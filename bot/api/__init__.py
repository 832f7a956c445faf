"""The HTTP API: list suspended runs and approve, decline or resume a waiting call, with a bearer token.

It is a front end over the runtime like the Slack adapter, served on the same port (`serve`,
`socket`, `dev`). Who is named must be a person (`ApiFront.identify`); who may decide is asked of the same decision
rule as a click (`ApiFront.authorize`),
and a decision is shown where the call was shown (`ApiFront.after_decision`); the Slack adapter
provides both. The OpenAPI document is at `/api/openapi.json`. While the API is off (no token), its
addresses answer 404 saying so (`add_api_off_routes`).
"""

from .off import API_OFF, add_api_off_routes
from .openapi import openapi_document
from .routes import ApiDecision, ApiError, ApiFront, add_api_routes

__all__ = [
    "API_OFF",
    "ApiDecision",
    "ApiError",
    "ApiFront",
    "add_api_off_routes",
    "add_api_routes",
    "openapi_document",
]
