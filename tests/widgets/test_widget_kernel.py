"""The explorer in a real ipykernel: real comms, the polling thread, the saved widget state."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

CELLS = [
    """\
from jupyter_scratchpad import ScratchStore
from jupyter_scratchpad.widgets import Explorer
store = ScratchStore()
pad = store.scratchpad(run_id="nb", agent_id="me", model="gpt-4o")
records = [{"id": i, "user": {"name": f"user-{i}", "plan": "pro" if i % 3 else "free"}, "events": i % 17}
           for i in range(5000)]
h = pad.intercept({"data": records}, tool="list_users").handle
ex = Explorer(pad, poll_interval_s=0.1)
ex""",
    """\
ex.preview.head_button.click()
ex.grep.pattern.value = '"free"'
ex.grep.search_button.click()
print(all(r.ok for r in ex.results), ex.meter.bar.value == pad.budget.used, len(ex.results))""",
    """\
import time
h2 = pad.spill("a later output\\n" * 500, tool="later").handle
deadline = time.monotonic() + 30
while h2 not in ex.picker.entries and time.monotonic() < deadline:
    time.sleep(0.05)
print(h2 in ex.picker.entries, ex.handle == h)""",
    """\
ex.close()
store.close()
print(ex._poller.thread.is_alive())""",
]


@pytest.mark.slow
def test_explorer_in_a_real_kernel() -> None:
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(src) for src in CELLS])
    client = NotebookClient(nb, timeout=180, kernel_name="python3", store_widget_state=True)
    client.execute()
    outputs = [cell.outputs for cell in nb.cells]
    assert not [o for cell in outputs for o in cell if o.output_type == "error"]
    shown = outputs[0][0]
    assert shown.output_type == "execute_result"
    model_id = shown.data["application/vnd.jupyter.widget-view+json"]["model_id"]
    assert "Scratchpad explorer" in shown.data["text/plain"] and "list_users_" in shown.data["text/html"]
    assert [o.text.strip() for o in outputs[1] if o.output_type == "stream"] == ["True True 2"]
    assert [o.text.strip() for o in outputs[2] if o.output_type == "stream"] == ["True True"]
    assert [o.text.strip() for o in outputs[3] if o.output_type == "stream"] == ["False"]
    # The state the kernel sent over its comms, as a notebook saves it: the outer box with its class.
    state = nb.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    outer = state[model_id]["state"]
    assert outer["_view_name"] == "VBoxView" and "jp-scratchpad-explorer" in outer["_dom_classes"]
    assert len(json.dumps(state)) < 1_000_000
