"""Block Kit for the feedback buttons under an agent's answer: Slack's `feedback_buttons` element in a
`context_actions` block. Pure functions.

Each button's value names its rating and the run the answer closed (`up:<run_id>`); the click's handler
checks the run against the thread the click came from before recording anything.
"""

from __future__ import annotations

from typing import Any

from slack_sdk.models.blocks import ContextActionsBlock, FeedbackButtonObject, FeedbackButtonsElement

from .stores.answer_feedback import RATINGS, Rating
from .translator import N_, Translator

FEEDBACK = "answer_feedback"
"""The action_id of the feedback buttons."""
SHOWN = {"up": "👍", "down": "👎"}
LABELS = {"up": N_("This answer was helpful"), "down": N_("This answer was not helpful")}


def build_feedback_block(run_id: str, tr: Translator) -> dict[str, Any]:
    """The thumbs up / down under the answer of run `run_id`."""
    buttons = {
        rating: FeedbackButtonObject(
            text=SHOWN[rating], value=f"{rating}:{run_id}", accessibility_label=tr.gettext(LABELS[rating])
        )
        for rating in RATINGS
    }
    element = FeedbackButtonsElement(action_id=FEEDBACK, positive_button=buttons["up"], negative_button=buttons["down"])
    return ContextActionsBlock(block_id=f"feedback_{run_id}"[:255], elements=[element]).to_dict()


def read_feedback_value(value: Any) -> tuple[Rating, str] | None:
    """The rating and run id a feedback button's value names; None for anything else."""
    if not isinstance(value, str) or ":" not in value:
        return None
    rating, run_id = value.split(":", 1)
    if rating not in RATINGS or not run_id or len(run_id) > 64:
        return None
    return rating, run_id  # type: ignore[return-value]


def thanks_text(rating: Rating, change: str, tr: Translator) -> str:
    """What the clicker alone is told after a click."""
    if change == "same":
        return tr.gettext("You rated this answer {rating} already.", rating=SHOWN[rating])
    if change == "changed":
        return tr.gettext("Your rating of this answer is now {rating}. Thanks!", rating=SHOWN[rating])
    return tr.gettext("Thanks for your feedback {rating}.", rating=SHOWN[rating])
