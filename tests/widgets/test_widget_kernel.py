"""The explorer in a real ipykernel: real comms, refreshed after each cell, small saved state."""

from __future__ import annotations

import json
import os
from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

CELLS = [
    "%load_ext jupyter_scratchpad",
    "{'data': [{'id': i, 'user': {'name': f'user-{i}', 'plan': 'pro' if i % 3 else 'free'}} for i in range(5000)]}",
    "%scratch explore",
    """\
from jupyter_scratchpad.widgets import open_explorers
from jupyter_scratchpad.ipython import get_session
[ex] = open_explorers()
reply = ex.handle_request({"type": "request", "id": 1, "action": "grep", "args": {"pattern": '"free"'}})
print(reply["ok"], len(reply["view"]["marked"]), get_session().pad.budget.used == ex.budget["used"])""",
    "'a later output\\n' * 3000",
    "print(len(ex.entries), ex.handle == ex.entries[0]['handle'])",
]


@pytest.mark.slow
def test_explorer_in_a_real_kernel(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in CELLS])
    # The kernel imports this checkout's package, whatever the environment has installed.
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH")]))
    )
    client = NotebookClient(
        nb, timeout=180, kernel_name="python3", store_widget_state=True, resources={"metadata": {"path": str(tmp_path)}}
    )
    client.execute()
    outputs = [cell.outputs for cell in nb.cells]
    assert not [o for cell in outputs for o in cell if o.output_type == "error"]
    (shown,) = outputs[2]
    assert shown.output_type == "display_data"
    model_id = shown.data["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert shown.data["application/vnd.jupyter.scratchpad.explorer+json"]["model_id"] == model_id
    assert "Scratchpad explorer" in shown.data["text/plain"] and "cell_2_" in shown.data["text/html"]
    assert [o.text.strip() for o in outputs[3] if o.output_type == "stream"] == ["True 20 True"]
    # The cell after a new spill: the explorer saw it without being asked, and kept its selection.
    assert [o.text.strip() for o in outputs[5] if o.output_type == "stream"] == ["2 True"]
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    assert {m["model_name"] for m in state.values()} == {"AnyModel", "LayoutModel"} and len(state) == 2
    assert "jp-scratchpad-explorer" in state[model_id]["state"]["_dom_classes"]
    assert len(json.dumps(state)) < 60_000  # the old explorer saved 202 KB in 246 models
