"""Progress bars: a text bar in a terminal, tqdm's notebook widget in a real Jupyter kernel."""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

from jupyter_scratchpad.lab import compare, replay
from jupyter_scratchpad.lab._progress import bar_class, in_kernel

WIDGET_MIME = "application/vnd.jupyter.widget-view+json"


def test_a_terminal_gets_a_text_bar_over_the_bytes_of_the_trace(
    data_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert not in_kernel()
    assert bar_class().__module__ == "tqdm.std"
    replay(data_dir / "trace.jsonl", progress=True)
    err = capsys.readouterr().err
    assert "replay trace.jsonl: 100%" in err
    size_kb = (data_dir / "trace.jsonl").stat().st_size / 1000
    assert f"{size_kb:.1f}k/{size_kb:.1f}k" in err  # progress in bytes of the file


def test_calls_in_memory_count_calls(capsys: pytest.CaptureFixture[str]) -> None:
    compare([{"tool": "a", "result": "x"}] * 3, {"p": None}, progress=True)
    assert "3/3" in capsys.readouterr().err


def test_no_bar_when_asked_for_none(data_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    replay(data_dir / "trace.jsonl", progress=False)
    assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_a_kernel_gets_the_notebook_widget(data_dir: Path) -> None:
    code = (
        "from jupyter_scratchpad.lab import replay\n"
        "from jupyter_scratchpad.lab._progress import bar_class\n"
        "print(bar_class().__module__)\n"
        f"df = replay({str(data_dir / 'trace.jsonl')!r}, progress=True)\n"
        "print(len(df))\n"
    )
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(code)])
    NotebookClient(nb, timeout=300, kernel_name="python3").execute()
    outputs = nb.cells[0].outputs
    assert [o for o in outputs if o.output_type == "error"] == []
    text = "".join(o.get("text", "") for o in outputs if o.output_type == "stream" and o.name == "stdout")
    assert text.split() == ["tqdm.notebook", "8"]
    widgets = [o for o in outputs if o.output_type == "display_data" and WIDGET_MIME in o.data]
    assert len(widgets) == 1
    assert "replay trace.jsonl" in widgets[0].data["text/plain"]
