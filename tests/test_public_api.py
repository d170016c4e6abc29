"""The package exports exactly the documented names; the core imports no Jupyter package."""

from __future__ import annotations

import subprocess
import sys

import jupyter_scratchpad


def test_exports_are_the_documented_api() -> None:
    documented = {
        "ScratchStore",
        "SpillPolicy",
        "count_tokens",
        "Scratchpad",
        "ToolResult",
        "InterceptResult",
        "ContextBudget",
        "SpillDecision",
        "ScratchpadError",
        "load_ipython_extension",
        "unload_ipython_extension",
        "__version__",
    }
    assert documented <= set(jupyter_scratchpad.__all__)
    assert jupyter_scratchpad.__all__ == sorted(jupyter_scratchpad.__all__)
    for name in jupyter_scratchpad.__all__:
        assert hasattr(jupyter_scratchpad, name), name


def test_errors_form_one_tree() -> None:
    from jupyter_scratchpad import errors

    for name in errors.__all__:
        assert issubclass(getattr(errors, name), errors.ScratchpadError)


def test_core_imports_no_jupyter_package() -> None:
    code = (
        "import sys, jupyter_scratchpad\n"
        "from jupyter_scratchpad import ScratchStore\n"
        "s = ScratchStore(); p = s.scratchpad(); r = p.intercept('x\\n' * 20000, tool='t')\n"
        "p.call_tool('grep', {'handle': r.handle, 'pattern': 'x'}); p.call_tool('sql', {'query': 'select 1'})\n"
        "s.close()\n"
        "bad = [m for m in sys.modules if m.split('.')[0] in ('IPython', 'ipywidgets', 'ipykernel', 'jupyter_server',"
        " 'traitlets', 'pandas', 'matplotlib', 'anywidget')]\n"
        "print(bad)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
