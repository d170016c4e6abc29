"""A stub's Next line (probe AB, as a model reads it): the array SQL names, no placeholders."""

from __future__ import annotations

from jupyter_scratchpad import Scratchpad
from jupyter_scratchpad.spill._stub import has_hole, next_steps


def test_the_next_array_is_the_one_sql_names_not_an_array_of_arrays(pad: Scratchpad) -> None:
    # a Prometheus answer's records are $.data.result; the stub sent item_schema to $.grid (an
    # array of arrays: "(item) array all"), while its own SQL relation was h.data__result
    value = {
        "status": "success",
        "data": {"resultType": "matrix", "result": [
            {"metric": {"job": f"j{i}"}, "values": [[1714521600 + j * 60, str(j)] for j in range(240)]} for i in range(30)
        ]},
        "grid": [[list(range(8)) for _ in range(40)] for _ in range(20)],
    }  # fmt: skip
    r = pad.intercept(value, tool="prom")
    assert r.spilled and r.stub is not None
    assert 'item_schema path="$.data.result"' in str(r.content) and "$.grid" not in str(r.content).split("Next")[-1]
    steps = dict(next_steps(r.stub))
    assert steps["item_schema"] == {"handle": r.handle, "path": "$.data.result"}
    got = pad.call_tool("item_schema", steps["item_schema"])
    assert got.ok and "metric.job" in got.text
    for tool, arguments in next_steps(r.stub):  # every whole step runs as written
        if not has_hole(arguments):
            assert pad.call_tool(tool, arguments).ok, (tool, arguments)


def test_a_text_stub_names_its_tools_without_placeholders(pad: Scratchpad) -> None:
    log = "\n".join(f"2026-12-06T10:{i // 60 % 60:02d}:{i % 60:02d} INFO request {i} served" for i in range(20_000))
    csv = "id,status\n" + "\n".join(f"{i},{'ok' if i % 3 else 'failed'}" for i in range(20_000))
    for text in (log, csv):
        content = str(pad.intercept(text, tool="export").content)
        last = content.rsplit("\n", 1)[-1]
        assert last.startswith("Next, with this handle:") and "…" not in last and "=" not in last, last
