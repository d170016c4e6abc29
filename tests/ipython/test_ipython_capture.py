"""%%scratch [--name NAME] [--tool TOOL] [--force]: capture a cell's output as one entry."""

from __future__ import annotations

from typing import Any

import pandas as pd
import pytest
from IPython.core.error import UsageError
from ipython_helpers import pods

from jupyter_scratchpad.ipython import ScratchSession


def test_named_capture_of_a_value_stays_json(ip: Any, session: ScratchSession,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    ip.user_ns["pods"] = pods
    result = ip.run_cell("%%scratch --name pods_now\nlisting = pods()\nlisting")
    out = capsys.readouterr().out
    assert result.result is None and out.count("[scratchpad]") == 1 and '"pods_now"' in out
    assert "pod-2999" not in out
    stub = session.pad.stub("pods_now")
    assert stub["format"] == "json" and stub["source_tool"] == "cell_1"
    assert session.pad.get("pods_now") == ip.user_ns["listing"]  # the cell ran in the user namespace
    count = ip.run_cell("%scratch sql SELECT len(items) AS n FROM pods_now").result
    assert count["n"][0] == 3000


def test_force_stores_a_small_output_under_a_tool_name(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%%scratch --force --tool inventory --name inv\nprint('a few words')")
    stub = session.pad.stub("inv")
    assert stub["source_tool"] == "inventory" and session.pad.get("inv") == "a few words\n"


def test_force_without_a_name_gets_a_handle_from_the_tool(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%%scratch --force\n[1, 2, 3]")
    [entry] = session.pad.entries()
    assert entry["handle"].startswith("cell_1_") and session.pad.get(entry["handle"]) == [1, 2, 3]


def test_several_outputs_become_one_markdown_document(ip: Any, session: ScratchSession) -> None:
    code = ("%%scratch --name mixed --force\nimport sys\nfrom IPython.display import display, JSON\n"
            "print('first line')\ndisplay(JSON({'k': [1, 2]}))\nsys.stderr.write('warned\\n')\n'the end'")
    ip.run_cell(code)
    body = session.pad.get("mixed")
    assert body == ('## stdout\n\nfirst line\n\n## display 1\n\n{\n  "k": [\n    1,\n    2\n  ]\n}\n\n'
                    "## stderr\n\nwarned\n\n## result\n\nthe end\n")
    assert session.pad.stub("mixed")["format"] == "markdown"
    schema = ip.run_cell("%scratch schema mixed").result
    assert "stdout" in schema.text and "result" in schema.text


def test_a_dataframe_is_stored_as_rows(ip: Any, session: ScratchSession) -> None:
    ip.user_ns["pd"] = pd
    ip.run_cell("%%scratch --name frame --force\npd.DataFrame({'a': range(3), 'b': list('xyz')})")
    assert session.pad.get("frame") == [{"a": 0, "b": "x"}, {"a": 1, "b": "y"}, {"a": 2, "b": "z"}]
    df = ip.run_cell("%scratch sql SELECT sum(a) AS total FROM frame").result
    assert df["total"][0] == 3


def test_below_the_threshold_the_outputs_are_replayed(ip: Any, session: ScratchSession,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    result = ip.run_cell("%%scratch --name small\nprint('hello')\n41 + 1")
    out = capsys.readouterr().out
    assert result.result == 42 and ip.user_ns["_"] == 42
    assert out.startswith("hello\n[scratchpad] not stored as small: ") and "--force" in out
    assert session.pad.entries() == []


def test_the_name_is_checked_before_the_cell_runs(ip: Any) -> None:
    with pytest.raises(UsageError, match="invalid handle 'Bad Name'"):
        ip.run_cell("%%scratch --name 'Bad Name'\nran = True")
    assert "ran" not in ip.user_ns


def test_an_exception_propagates_once_and_the_output_is_kept(ip: Any, session: ScratchSession) -> None:
    ip.user_ns["pods"] = pods
    with pytest.raises(KeyError, match="missing"):
        ip.run_cell("%%scratch --name partial\nprint(pods())\n{}['missing']")
    assert session.pad.get("partial").startswith("{'kind': 'PodList'")


def test_an_empty_cell_stores_nothing(ip: Any, session: ScratchSession, capsys: pytest.CaptureFixture[str]) -> None:
    ip.run_cell("%%scratch --force\nx = 1")
    assert "produced no output" in capsys.readouterr().out and session.pad.entries() == []


def test_magics_inside_the_captured_cell(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%%scratch --name inner --force\nvalue = 5\n%scratch auto")
    assert "auto-spill is on" in session.pad.get("inner")


def test_the_same_name_again_replaces_the_entry(ip: Any, session: ScratchSession) -> None:
    ip.run_cell("%%scratch --name again --force\n'first'")
    ip.run_cell("%%scratch --name again --force\n'second'")
    assert session.pad.get("again") == "second" and len(session.pad.entries()) == 1


def test_a_failing_cell_shows_the_users_traceback_only(ip: Any, capsys: pytest.CaptureFixture[str]) -> None:
    # four frames of the package's own code came before the user's
    with pytest.raises(ZeroDivisionError):
        ip.run_cell("%%scratch\nprint('x')\n1 / 0")
    shown = capsys.readouterr().out
    assert "ZeroDivisionError" in shown and "1 / 0" in shown, shown
    for ours in ("jupyter_scratchpad", "_capture.py", "_magics.py", "run_capture", "_execute("):
        assert ours not in shown, shown
