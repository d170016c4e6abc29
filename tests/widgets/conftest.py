"""Fixtures for the explorer: a realistic spilled pod listing, and explorers that are always closed."""

from __future__ import annotations

import random
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.widgets import Explorer

PODS = 4000
PHASES = ("Running", "Running", "Running", "Pending", "Succeeded", "Failed")
NAMESPACES = ("default", "kube-system", "payments", "search", "monitoring")


def pod_listing(n: int = PODS, seed: int = 7) -> dict[str, Any]:
    """A Kubernetes ``PodList`` as ``kubectl get pods -o json`` gives it, with some irregular items.

    Every 97th pod carries an ``annotations`` key the others lack, and failed pods carry a
    multi-line ``lastLog``: the schema tools must see them, not just the first item.
    """
    rng = random.Random(seed)
    items = []
    for i in range(n):
        phase = rng.choice(PHASES)
        ns = rng.choice(NAMESPACES)
        app = rng.choice(("web", "api", "worker", "cache", "db"))
        pod: dict[str, Any] = {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {
                "name": f"{app}-{i:05d}-{rng.randrange(16**5):05x}",
                "namespace": ns,
                "uid": f"{rng.getrandbits(128):032x}",
                "labels": {"app": app, "tier": rng.choice(("frontend", "backend"))},
                "creationTimestamp": f"2026-11-{1 + i % 28:02d}T{i % 24:02d}:{i % 60:02d}:00Z",
            },
            "spec": {
                "nodeName": f"node-{i % 17}",
                "containers": [
                    {
                        "name": app,
                        "image": f"registry.local/{app}:1.{i % 9}.{i % 5}",
                        "resources": {"limits": {"cpu": f"{1 + i % 4}", "memory": f"{128 * (1 + i % 8)}Mi"}},
                    }
                ],
            },
            "status": {
                "phase": phase,
                "restartCount": rng.randint(0, 12) if phase != "Pending" else 0,
                "podIP": f"10.{i % 256}.{(i // 256) % 256}.{rng.randint(1, 254)}",
            },
        }
        if i % 97 == 0:
            pod["metadata"]["annotations"] = {"deploy/revision": str(i // 97)}
        if phase == "Failed":
            pod["status"]["lastLog"] = "\n".join(
                [f"2026-11-30T12:00:{s:02d}Z ERROR {app}: connection refused (attempt {s})" for s in range(8)]
            )
        items.append(pod)
    return {"apiVersion": "v1", "kind": "PodList", "metadata": {"resourceVersion": "918273"}, "items": items}


@pytest.fixture(scope="session")
def pods() -> dict[str, Any]:
    return pod_listing()


@pytest.fixture
def pods_handle(pad: Scratchpad, pods: dict[str, Any]) -> str:
    result = pad.intercept(pods, tool="k8s_list_pods", server="k8s")
    assert result.spilled, "the listing is meant to be far over the spill threshold"
    assert result.handle is not None
    return result.handle


@pytest.fixture
def events_handle(pad: Scratchpad) -> str:
    """A second spill: a plain-text log (a ``(line_no, line)`` relation for SQL)."""
    lines = [
        f"2026-11-30T12:{i // 60 % 60:02d}:{i % 60:02d}Z {'WARN' if i % 11 == 0 else 'INFO'} "
        f"request id={i} path=/api/v1/items/{i % 300} took {i % 97} ms"
        for i in range(6000)
    ]
    result = pad.intercept("\n".join(lines), tool="tail_events")
    assert result.spilled and result.handle is not None
    return result.handle


@pytest.fixture
def make_explorer(pad: Scratchpad) -> Iterator[Callable[..., Explorer]]:
    """Explorers closed after the test."""
    made: list[Explorer] = []

    def make(handle: str | None = None, target: Scratchpad | None = None, **kwargs: Any) -> Explorer:
        explorer = Explorer(target or pad, handle=handle, **kwargs)
        made.append(explorer)
        return explorer

    yield make
    for explorer in made:
        explorer.close()


@pytest.fixture
def make_pods() -> Callable[..., dict[str, Any]]:
    return pod_listing
