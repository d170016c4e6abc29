"""Deterministic, realistic benchmark data: k8s pod lists, service logs, API records, prose.

Every generator takes a seed and a size and returns the same bytes for the same arguments, so
two runs of the benchmarks measure the same data. Large text is streamed in chunks (``iter_log``)
so a 1 GB body never has to sit in memory.

>>> text = log_text(10_000, seed=1)
>>> len(text.encode()) == 10_000 and text.endswith("\\n")
True
"""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Iterator
from typing import Any

__all__ = [
    "LOG_ERROR_PHRASE",
    "LOG_RARE_TOKEN",
    "api_records",
    "iter_log",
    "log_text",
    "pod_list",
    "prose_text",
    "stream_hash",
    "whitespace_text",
]

# A few lines of every log carry these, so grep benchmarks have rare and common targets.
LOG_RARE_TOKEN = "req-deadbeef"
LOG_ERROR_PHRASE = "upstream timeout"

_SERVICES = (
    "checkout",
    "payments",
    "inventory",
    "auth",
    "search",
    "gateway",
    "recommendations",
    "notifications",
    "billing",
    "shipping",
)
_NAMESPACES = ("default", "prod", "staging", "kube-system", "monitoring", "data")
_PATHS = (
    "/api/v1/orders",
    "/api/v1/orders/{id}",
    "/api/v1/users/{id}",
    "/api/v2/search",
    "/healthz",
    "/api/v1/cart/{id}/items",
    "/api/v1/payments",
    "/metrics",
    "/api/v1/login",
)
_METHODS = ("GET", "GET", "GET", "POST", "PUT", "DELETE")
_MESSAGES = (
    "request completed",
    "cache miss, fetching from origin",
    "retrying request",
    "connection pool exhausted, waiting",
    "served from cache",
    "user session refreshed",
    "slow query detected",
    "rate limit applied",
    "payload validated",
    "feature flag evaluated",
)
_ERRORS = (
    f"{LOG_ERROR_PHRASE} after 30000 ms calling inventory:8080",
    "database error: deadlock detected; transaction rolled back",
    "TLS handshake failed: certificate has expired",
    "panic recovered: index out of range [3] with length 3",
)
_STACK = (
    "Traceback (most recent call last):\n"
    '  File "/app/server/handlers.py", line 214, in handle_request\n'
    "    response = await self.upstream.call(request)\n"
    '  File "/app/server/upstream.py", line 88, in call\n'
    "    raise UpstreamTimeout(self.target, elapsed_ms)\n"
    "server.errors.UpstreamTimeout: inventory:8080 did not answer in 30000 ms\n"
)


def _log_lines(rng: random.Random, count: int, start_s: float) -> list[str]:
    """``count`` log lines (a stack trace may add more); timestamps advance from ``start_s``."""
    lines: list[str] = []
    t = start_s
    for _ in range(count):
        t += rng.expovariate(200.0)
        secs = int(t)
        stamp = (
            f"2026-12-02T{(secs // 3600) % 24:02d}:{(secs // 60) % 60:02d}:{secs % 60:02d}"
            f".{int((t - secs) * 1000):03d}Z"
        )
        roll = rng.random()
        level = (
            "ERROR"
            if roll < 0.01
            else "WARN"
            if roll < 0.05
            else "DEBUG"
            if roll < 0.25
            else "INFO"
        )
        service = rng.choice(_SERVICES)
        path = rng.choice(_PATHS).replace("{id}", str(rng.randrange(1, 10**6)))
        request_id = f"req-{rng.getrandbits(32):08x}"
        if rng.random() < 2e-5:
            request_id = LOG_RARE_TOKEN
        status = 500 if level == "ERROR" else rng.choice((200, 200, 200, 201, 204, 304, 404))
        msg = rng.choice(_ERRORS) if level == "ERROR" else rng.choice(_MESSAGES)
        lines.append(
            f"{stamp} {level:<5} [{service}] request_id={request_id} method={rng.choice(_METHODS)} "
            f"path={path} status={status} latency_ms={rng.lognormvariate(3.0, 1.0):.1f} "
            f'msg="{msg}"\n'
        )
        if level == "ERROR" and msg.startswith(LOG_ERROR_PHRASE) and rng.random() < 0.5:
            lines.append(_STACK)
    return lines


def iter_log(total_bytes: int, seed: int = 0, chunk_bytes: int = 4 << 20) -> Iterator[bytes]:
    """Exactly ``total_bytes`` of service log (UTF-8, newline-terminated), in chunks."""
    if total_bytes < 1:
        raise ValueError("total_bytes must be positive")
    rng = random.Random(seed)
    emitted = 0
    clock_s = 36_000.0
    while emitted < total_bytes:
        lines = _log_lines(rng, max(1, chunk_bytes // 160), clock_s)
        clock_s += 60.0
        chunk = "".join(lines).encode()
        if emitted + len(chunk) >= total_bytes:
            # Cut at the last whole line that fits and pad it so the body ends on a newline.
            room = total_bytes - emitted
            cut = chunk.rfind(b"\n", 0, room) + 1
            chunk = chunk[:cut] + b"#" * max(0, room - cut - 1) + (b"\n" if room > cut else b"")
        emitted += len(chunk)
        yield chunk


def log_text(total_bytes: int, seed: int = 0) -> str:
    """``iter_log`` joined into one string."""
    return b"".join(iter_log(total_bytes, seed)).decode()


def stream_hash(kind: str, total_bytes: int, seed: int) -> str:
    """A stable content id for a generated stream (the generator is deterministic)."""
    return hashlib.sha256(f"{kind}:{total_bytes}:{seed}".encode()).hexdigest()


def put_log(store: Any, scope: Any, handle: str, size: int, seed: int) -> Any:
    """Stream a generated log of ``size`` bytes into ``store`` as ``handle`` (never whole in
    memory, no token count); returns its entry."""
    entry, _ = store.put_body(
        scope,
        handle=handle,
        raw=iter_log(size, seed=seed),
        body=None,
        content_hash=stream_hash("log", size, seed),
        fmt="text",
        size_bytes=size,
        tokens=None,
        preview="",
        source_tool="bench_log",
        server=None,
    )
    return entry


def _pod(rng: random.Random, i: int) -> dict[str, Any]:
    service = rng.choice(_SERVICES)
    namespace = rng.choice(_NAMESPACES)
    suffix = f"{rng.getrandbits(40):010x}"
    phase = rng.choices(("Running", "Pending", "Succeeded", "Failed", "Unknown"), (85, 6, 5, 3, 1))[
        0
    ]
    ready = phase == "Running" and rng.random() > 0.05
    containers = []
    statuses = []
    for c in range(rng.choice((1, 1, 1, 2, 3))):
        name = service if c == 0 else rng.choice(("istio-proxy", "log-shipper", "metrics-sidecar"))
        version = f"{rng.randrange(1, 40)}.{rng.randrange(0, 20)}.{rng.randrange(0, 9)}"
        image = f"registry.example.com/{name}:{version}"
        containers.append(
            {
                "name": name,
                "image": image,
                "ports": [{"containerPort": 8080 + c, "protocol": "TCP"}],
                "resources": {
                    "requests": {
                        "cpu": f"{rng.choice((100, 250, 500))}m",
                        "memory": f"{rng.choice((128, 256, 512, 1024))}Mi",
                    },
                    "limits": {
                        "cpu": f"{rng.choice((500, 1000, 2000))}m",
                        "memory": f"{rng.choice((512, 1024, 2048))}Mi",
                    },
                },
                "env": [
                    {"name": "LOG_LEVEL", "value": rng.choice(("info", "debug"))},
                    {"name": "SERVICE_NAME", "value": service},
                ],
            }
        )
        restarts = 0 if rng.random() < 0.8 else rng.randrange(1, 50)
        status: dict[str, Any] = {
            "name": name,
            "image": image,
            "ready": ready,
            "restartCount": restarts,
            "containerID": f"containerd://{rng.getrandbits(128):032x}",
        }
        if ready:
            status["state"] = {
                "running": {"startedAt": f"2026-11-{rng.randrange(1, 30):02d}T08:00:00Z"}
            }
        else:
            status["state"] = {
                "waiting": {
                    "reason": rng.choice(
                        ("CrashLoopBackOff", "ImagePullBackOff", "ContainerCreating")
                    )
                }
            }
        statuses.append(status)
    pod: dict[str, Any] = {
        "metadata": {
            "name": f"{service}-{suffix[:8]}-{suffix[8:]}",
            "namespace": namespace,
            "uid": f"{rng.getrandbits(128):032x}",
            "resourceVersion": str(1_000_000 + i),
            "creationTimestamp": (
                f"2026-11-{rng.randrange(1, 30):02d}T{rng.randrange(24):02d}:00:00Z"
            ),
            "labels": {
                "app": service,
                "pod-template-hash": suffix[:8],
                "tier": rng.choice(("frontend", "backend", "data")),
            },
            "ownerReferences": [
                {
                    "apiVersion": "apps/v1",
                    "kind": "ReplicaSet",
                    "name": f"{service}-{suffix[:8]}",
                    "controller": True,
                }
            ],
        },
        "spec": {
            "nodeName": f"node-{rng.randrange(1, 60):03d}",
            "restartPolicy": "Always",
            "serviceAccountName": service,
            "containers": containers,
        },
        "status": {
            "phase": phase,
            "hostIP": f"10.0.{rng.randrange(256)}.{rng.randrange(256)}",
            "podIP": f"10.244.{rng.randrange(256)}.{rng.randrange(256)}",
            "qosClass": rng.choice(("Burstable", "Guaranteed", "BestEffort")),
            "conditions": [
                {"type": t, "status": "True" if ready else "False"}
                for t in ("Initialized", "Ready", "ContainersReady", "PodScheduled")
            ],
            "containerStatuses": statuses,
        },
    }
    if rng.random() < 0.3:
        pod["metadata"]["annotations"] = {
            "prometheus.io/scrape": "true",
            "prometheus.io/port": "9090",
        }
    return pod


def pod_list(target_bytes: int, seed: int = 0) -> str:
    """A ``kubectl get pods -o json`` style PodList of about ``target_bytes`` (compact JSON)."""
    rng = random.Random(seed)
    items: list[dict[str, Any]] = []
    size = 0
    while size < target_bytes:
        pod = _pod(rng, len(items))
        size += len(json.dumps(pod)) + 2
        items.append(pod)
    return json.dumps(
        {
            "apiVersion": "v1",
            "kind": "PodList",
            "metadata": {"resourceVersion": "9123456"},
            "items": items,
        }
    )


def api_records(count: int, seed: int = 0) -> list[dict[str, Any]]:
    """``count`` order records as an API would return them: nested, some keys optional.

    One key (``refund``) appears only in the very last record: schema inference that samples
    misses it.
    """
    rng = random.Random(seed)
    out: list[dict[str, Any]] = []
    for i in range(count):
        record: dict[str, Any] = {
            "id": f"ord_{i:08d}",
            "created_at": f"2026-{rng.randrange(1, 13):02d}-{rng.randrange(1, 29):02d}T12:00:00Z",
            "status": rng.choices(
                ("paid", "shipped", "delivered", "cancelled", "refunded"), (30, 25, 35, 7, 3)
            )[0],
            "customer": {
                "id": f"cus_{rng.randrange(50_000):06d}",
                "country": rng.choice(("US", "DE", "FR", "GB", "JP", "BR", "IN", "CA")),
                "vip": rng.random() < 0.05,
            },
            "total": {
                "amount": round(rng.lognormvariate(3.5, 0.8), 2),
                "currency": rng.choice(("USD", "EUR", "GBP")),
            },
            "items": [
                {"sku": f"SKU-{rng.randrange(10_000):05d}", "qty": rng.randrange(1, 5)}
                for _ in range(rng.randrange(1, 4))
            ],
        }
        if rng.random() < 0.4:
            record["coupon"] = rng.choice(("WELCOME10", "BLACKFRIDAY", "FREESHIP"))
        if rng.random() < 0.2:
            record["notes"] = "leave at the door\nring twice" if rng.random() < 0.5 else None
        out.append(record)
    if out:
        out[-1]["refund"] = {"amount": 10.0, "reason": "damaged"}
    return out


_WORD_TEXT = (
    "the of and to a in is that for it as was with be by on not he this are or his from at "
    "which but have an they you were her she there had been one all we their has more when "
    "will would who so if about into out up time can only other new some could these two may "
    "first then do any like my now over such our man me even most made after also did many "
    "before must through back years where much your way well down should because each just "
    "those people how too little state good very make world still own see men work long get "
    "here between both life being under never day same another know while last might us "
    "great old year off come since against go came right used take three notebook kernel "
    "output model context token budget agent query storage memory process request response "
    "cluster deployment service latency throughput measurement benchmark interpreter "
    "structure schema analysis"
)
_WORDS = _WORD_TEXT.split()


def prose_text(total_chars: int, seed: int = 0) -> str:
    """English-like prose (Zipf-distributed words, sentences, paragraphs) of ``total_chars``."""
    rng = random.Random(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(_WORDS))]
    parts: list[str] = []
    size = 0
    while size < total_chars:
        words = rng.choices(_WORDS, weights, k=rng.randrange(8, 28))
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), f"{rng.randrange(2, 2030)}")
        sentence = " ".join(words)
        if rng.random() < 0.4:
            cut = rng.randrange(2, len(words))
            sentence = " ".join(words[:cut]) + ", " + " ".join(words[cut:])
        sentence = sentence[0].upper() + sentence[1:] + rng.choice((".", ".", ".", "?", "!"))
        sep = "\n\n" if rng.random() < 0.15 else " "
        parts.append(sentence + sep)
        size += len(sentence) + len(sep)
    return "".join(parts)[:total_chars]


def whitespace_text(total_chars: int) -> str:
    """A pathological run: indentation-like whitespace with no split point tiktoken can use."""
    unit = " " * 7 + "\t"
    return (unit * (total_chars // len(unit) + 1))[:total_chars]
