"""Tests of the benchmark harness: timing, failures, child RSS, the report, the data generators.

Run: ``.venv/bin/python -m pytest benchmarks/tests -q`` (the quick benchmark run in CI exercises
every benchmark itself, with its ours-vs-baseline agreement checks).
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from benchmarks import _data, run  # noqa: E402
from benchmarks._harness import result, run_child, silenced_stderr, time_side_by_side  # noqa: E402
from benchmarks._report import fmt_ratio, fmt_seconds, render_report, validate_row  # noqa: E402

GOOD_ROW = {"name": "x", "ours_s": 0.5, "baseline": "y", "baseline_s": 1.0, "ratio": 0.5,
            "data": "1 MB", "runs": 3}


# -- rows -------------------------------------------------------------------------------------


def test_result_builds_a_valid_row_with_median_and_ratio() -> None:
    row = result("n", [3.0, 1.0, 2.0], "base", [4.0, 8.0, 6.0], "d", goal="2x", goal_ratio=2.0)
    validate_row(row)
    assert row["ours_s"] == 2.0 and row["baseline_s"] == 6.0
    assert row["ratio"] == pytest.approx(1 / 3)
    assert row["goal_met"] is True and row["runs"] == 3


def test_result_without_baseline_times_has_no_ratio() -> None:
    row = result("n", [1.0], "base", [], "d", failure="PanicException: boom", goal="x", goal_ratio=1.0)
    validate_row(row)
    assert row["baseline_s"] is None and row["ratio"] is None
    assert row["baseline_failed"] == "PanicException: boom" and "goal_met" not in row


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"name": None}, "'name' must be str"),
        ({"ours_s": "fast"}, "'ours_s' must be float"),
        ({"ours_s": float("nan")}, "finite"),
        ({"runs": 0}, "runs must be >= 1"),
        ({"runs": True}, "'runs' must be int"),
        ({"ratio": float("inf")}, "'ratio' must be a finite number"),
        ({"notes": 3}, "'notes' must be a string"),
        ({"goal_met": "yes"}, "'goal_met' must be a bool"),
    ],
)
def test_validate_row_names_what_is_wrong(change: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        validate_row({**GOOD_ROW, **change})


def test_validate_row_rejects_a_non_dict() -> None:
    with pytest.raises(ValueError, match="must be a dict"):
        validate_row([GOOD_ROW])


def test_formatting() -> None:
    assert fmt_seconds(2.5e-5) == "25 µs"
    assert fmt_seconds(0.0123) == "12.3 ms"
    assert fmt_seconds(3.0) == "3.00 s"
    assert fmt_seconds(None) == "—"
    assert fmt_ratio(0.04) == "0.040 (25× faster)"
    assert fmt_ratio(2.0) == "2.00 (2× slower)"
    assert fmt_ratio(1.001) == "1.00 (same)"
    assert fmt_ratio(None) == "—"


# -- timing -----------------------------------------------------------------------------------


def test_side_by_side_alternates_and_checks_every_pair() -> None:
    calls: list[str] = []
    pairs: list[tuple[int, int]] = []
    ours_s, base_s, failure = time_side_by_side(
        lambda i: calls.append(f"ours{i}") or i,
        lambda i: calls.append(f"base{i}") or -i,
        4,
        check_pair=lambda a, b: pairs.append((a, b)),
    )
    # one untimed warm-up call per side first (i = runs), its pair checked too
    assert calls == ["ours4", "base4", "ours0", "base0", "base1", "ours1", "ours2", "base2", "base3", "ours3"]
    assert pairs == [(4, -4), (0, 0), (1, -1), (2, -2), (3, -3)]
    assert len(ours_s) == len(base_s) == 4 and failure is None


def test_side_by_side_without_warmup_times_every_call() -> None:
    calls: list[int] = []
    ours_s, _, _ = time_side_by_side(lambda i: calls.append(i), None, 2, warmup=False)
    assert calls == [0, 1] and len(ours_s) == 2


def test_a_baseline_failing_partway_leaves_no_verdict() -> None:
    def baseline(i: int) -> int:
        if i == 1:
            raise FakePanic("late")
        return i

    ours_s, base_s, failure = time_side_by_side(lambda i: i, baseline, 3, baseline_errors=(BaseException,))
    assert len(ours_s) == 3 and len(base_s) == 1 and failure is not None
    row = result("n", ours_s, "base", base_s, "d", failure=failure, goal="2x", goal_ratio=1e9)
    assert row["ratio"] is not None and "goal_met" not in row


class FakePanic(BaseException):
    """Stands in for pyo3's PanicException: a BaseException, not an Exception."""


def test_a_declared_baseline_failure_is_recorded_and_not_retried() -> None:
    attempts = []

    def baseline(i: int) -> None:
        attempts.append(i)
        os.write(2, b"thread '<unnamed>' panicked at src/lib.rs:1:1\n")
        raise FakePanic("")

    ours_s, base_s, failure = time_side_by_side(lambda i: i, baseline, 3, baseline_errors=(BaseException,))
    assert len(ours_s) == 3 and base_s == [] and attempts == [3]  # failed in its warm-up call
    assert failure is not None and failure.startswith("FakePanic") and "panicked" in failure


def test_an_undeclared_baseline_error_is_a_benchmark_bug_and_propagates() -> None:
    def baseline(i: int) -> None:
        raise TypeError("my mistake")

    with pytest.raises(TypeError, match="my mistake"):
        time_side_by_side(lambda i: i, baseline, 2)


def test_a_disagreement_fails_the_run() -> None:
    def disagree(a: int, b: int) -> None:
        from benchmarks._harness import check

        check(a == b, "ours and the baseline differ")

    with pytest.raises(AssertionError, match="differ"):
        time_side_by_side(lambda i: 1, lambda i: 2, 2, check_pair=disagree)


def test_silenced_stderr_captures_file_descriptor_2() -> None:
    with silenced_stderr() as err:
        os.write(2, b"from native code\n")
    assert err.text == "from native code\n"


# -- child processes --------------------------------------------------------------------------


def test_child_rss_is_its_own_not_the_forked_parents(tmp_path: Path) -> None:
    path = tmp_path / "data.bin"
    path.write_bytes(b"0123456789" * 1000)
    ballast = bytearray(300 << 20)  # the parent is now > 300 MB resident
    ballast[:: 4096] = b"x" * len(ballast[:: 4096])
    report = run_child({"op": "py_bytes", "path": str(path), "start": 5, "end": 25, "repeats": 2})
    del ballast
    assert report["digest"] == hashlib.sha256(b"56789012345678901234").hexdigest()
    assert len(report["seconds"]) == 2
    assert 1 < report["peak_rss_mb"] < 100


def test_child_runs_a_command_and_reports_its_output(tmp_path: Path) -> None:
    path = tmp_path / "lines.txt"
    path.write_text("".join(f"line {n}\n" for n in range(1, 101)))
    report = run_child({"op": "cmd", "argv": ["sed", "-n", "10,12p;12q", str(path)], "repeats": 2})
    assert report["digest"] == hashlib.sha256(b"line 10\nline 11\nline 12").hexdigest()
    assert report["stdout_lines"] == 3 and report["floor_mb"] > 0


def test_child_python_line_reads_match_sed(tmp_path: Path) -> None:
    path = tmp_path / "lines.txt"
    path.write_text("".join(f"line {n}\n" for n in range(1, 101)))
    py = run_child({"op": "py_lines", "path": str(path), "start": 10, "end": 12, "repeats": 1})
    sed = run_child({"op": "cmd", "argv": ["sed", "-n", "10,12p;12q", str(path)], "repeats": 1})
    assert py["digest"] == sed["digest"]


def test_child_rejects_an_unknown_task() -> None:
    with pytest.raises(RuntimeError, match="unknown op"):
        run_child({"op": "nope"})


# -- data -------------------------------------------------------------------------------------


@pytest.mark.parametrize("size", [1, 159, 10_000, 5 << 20])
def test_iter_log_is_exactly_the_size_asked_and_deterministic(size: int) -> None:
    chunks = list(_data.iter_log(size, seed=3, chunk_bytes=1 << 20))
    text = b"".join(chunks)
    assert len(text) == size and text.endswith(b"\n")
    assert text == b"".join(_data.iter_log(size, seed=3, chunk_bytes=1 << 20))
    assert text != b"".join(_data.iter_log(size, seed=4, chunk_bytes=1 << 20)) or size < 2


def test_iter_log_refuses_an_empty_body() -> None:
    with pytest.raises(ValueError, match="positive"):
        next(_data.iter_log(0))


def test_pod_list_is_a_kubernetes_pod_list() -> None:
    pods = json.loads(_data.pod_list(200_000, seed=1))
    assert pods["kind"] == "PodList" and len(pods["items"]) > 20
    first = pods["items"][0]
    assert {"metadata", "spec", "status"} <= set(first)
    assert first["status"]["phase"] in {"Running", "Pending", "Succeeded", "Failed", "Unknown"}


def test_api_records_have_a_key_only_in_the_last_record() -> None:
    records = _data.api_records(500, seed=2)
    assert [i for i, r in enumerate(records) if "refund" in r] == [499]
    assert records == _data.api_records(500, seed=2)


def test_prose_and_whitespace_have_the_size_asked() -> None:
    assert len(_data.prose_text(12_345, seed=1)) == 12_345
    ws = _data.whitespace_text(1000)
    assert len(ws) == 1000 and not ws.strip()


# -- the runner and the report ----------------------------------------------------------------


def test_report_shows_machine_command_rows_failures_and_goals() -> None:
    ok = result("grep: rare", [0.01], "GNU grep", [0.02], "10 MB", goal="within 2x", goal_ratio=2.0)
    missed = result("sql", [0.3], "DuckDB", [0.1], "5 MB", goal="within 1.2x", goal_ratio=1.2)
    failed = result("count", [0.1], "tiktoken", [], "1 MB", failure="PanicException: stack overflow")
    sections = [
        {"module": "benchmarks.bench_a", "rows": [ok, missed, failed], "error": None, "seconds": 1.0},
        {"module": "benchmarks.bench_b", "rows": [], "error": "Traceback: boom", "seconds": 0.1},
    ]
    machine = {"cores": "2", "memory": "23.5 GiB", "cpu": "EPYC", "os": "Debian", "python": "3.11",
               "versions": "duckdb 2", "commit": "abc123"}
    text = render_report(sections, machine=machine, started=0.0, command="python benchmarks/run.py --quick",
                         quick=True, elapsed_s=3.0)
    assert "`python benchmarks/run.py --quick`" in text and "1970-01-01 00:00 UTC" in text
    assert "2 cores (EPYC), 23.5 GiB memory" in text
    assert "| grep: rare | 10 ms | GNU grep | 20 ms | 0.500 (2× faster) | 10 MB | 1 |" in text
    assert "| sql | within 1.2x | 3.00 (3× slower) | **no** |" in text
    assert "| grep: rare | within 2x | 0.500 (2× faster) | yes |" in text
    assert "baseline failed" in text and "PanicException: stack overflow" in text
    assert "## b" in text and "This benchmark failed" in text and "Traceback: boom" in text


def test_discover_finds_the_benchmark_modules() -> None:
    names = run.discover()
    assert {"benchmarks.bench_grep", "benchmarks.bench_sql", "benchmarks.bench_tokens"} <= set(names)
    assert run.discover(["sql"]) == ["benchmarks.bench_sql"]


def test_run_module_reports_an_error_instead_of_raising() -> None:
    rows, error, _ = run.run_module("benchmarks.no_such_bench", quick=True)
    assert rows == [] and error is not None and "ModuleNotFoundError" in error


def test_main_refuses_a_filter_that_matches_nothing() -> None:
    with pytest.raises(SystemExit) as exc:
        run.main(["--quick", "--only", "no-such-benchmark"])
    assert exc.value.code == 2


def test_main_runs_a_real_benchmark_and_writes_the_report(tmp_path: Path) -> None:
    output = tmp_path / "out" / "BENCH.md"
    assert run.main(["--quick", "--only", "store", "--output", str(output)]) == 0
    text = output.read_text()
    assert text.startswith("# Benchmarks\n") and "## store" in text
    assert "| write a body |" in text and "| read 50 lines from the middle of a body |" in text
