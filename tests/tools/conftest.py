from __future__ import annotations

import pytest

from jupyter_scratchpad import Scratchpad


def pods(n: int = 3000) -> dict:
    return {
        "apiVersion": "v1",
        "kind": "PodList",
        "items": [
            {
                "metadata": {
                    "name": f"pod-{i}",
                    "namespace": "prod" if i % 4 else "dev",
                    **({"labels": {"app": "web"}} if i % 2 else {}),
                },
                "status": {"phase": ["Running", "Pending", "Failed"][i % 3], "restarts": i % 5},
                **(
                    {"note": "line one\nline two\nline three\nline four\nline five\nline six\nline seven"}
                    if i == 7
                    else {}
                ),
            }
            for i in range(n)
        ],
    }


@pytest.fixture
def pods_handle(pad: Scratchpad) -> str:
    r = pad.intercept(pods(), tool="k8s_list_pods", server="k8s")
    assert r.spilled
    return r.handle  # type: ignore[return-value]


@pytest.fixture
def log_handle(pad: Scratchpad) -> str:
    lines = [
        f"2026-12-02T10:{i // 60 % 60:02d}:{i % 60:02d}Z {'ERROR' if i % 50 == 0 else 'INFO'} "
        f"svc=api req={i} msg=handled"
        for i in range(5000)
    ]
    r = pad.intercept("\n".join(lines) + "\n", tool="fetch_logs")
    assert r.spilled
    return r.handle  # type: ignore[return-value]
