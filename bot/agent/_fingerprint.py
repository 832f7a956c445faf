"""The fingerprint that binds an approval to the exact call that was shown."""

import hashlib
import json
from typing import Any


def fingerprint(tool_name: str, args: Any) -> str:
    """SHA-256 of the canonical JSON of the tool name and its arguments (sorted keys, no spaces)."""
    canonical = json.dumps({"tool": tool_name, "args": args}, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(canonical.encode()).hexdigest()
