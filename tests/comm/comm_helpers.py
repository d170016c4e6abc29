"""Helpers of the comm tests: deterministic content and schema checks."""

from __future__ import annotations

from typing import Any

import jsonschema

from jupyter_scratchpad.comm import load_schema


def pods(n: int) -> dict[str, Any]:
    """A Kubernetes-like listing: large enough to spill at the default threshold."""
    return {
        "kind": "PodList",
        "items": [
            {
                "metadata": {"name": f"pod-{i}", "namespace": "prod" if i % 3 else "dev"},
                "status": {"phase": "Running" if i % 7 else "Pending", "restarts": i % 5},
            }
            for i in range(n)
        ],
    }


def check(name: str, message: object) -> None:
    """Validate ``message`` against the protocol schema ``name``."""
    jsonschema.Draft202012Validator(load_schema(name)).validate(message)
