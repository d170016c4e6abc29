"""A real terminal IPython (``ipython`` reading a piped session): stubs as text, store removed at exit."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

SESSION = """\
%load_ext jupyter_scratchpad
{"rows": [f"row-{i}" for i in range(20000)]}
print("payload-line " * 5000)
_["rows"][12345]
import jupyter_scratchpad.ipython as j; print("STORE", j.get_session().store.path)
"""


@pytest.mark.slow
def test_terminal_ipython_spills_and_cleans_up(tmp_path: Path) -> None:
    ipython = Path(sys.executable).with_name("ipython")
    env = {**os.environ, "IPYTHONDIR": str(tmp_path / "ipython"), "TERM": "dumb"}
    proc = subprocess.run([str(ipython), "--no-banner", "--simple-prompt", "--colors=nocolor"],
                          input=SESSION, capture_output=True, text=True, env=env, timeout=120, check=False)
    out = proc.stdout
    assert proc.returncode == 0, proc.stderr
    assert out.count("[scratchpad] The output of") == 2
    assert re.search(r'stored as handle "cell_2_[0-9a-f]{12}": json', out)
    assert re.search(r'stored as handle "cell_3_stdout_[0-9a-f]{12}": text', out)
    assert "row-12345" in out and out.count("row-12345") == 1  # only the value asked for afterwards
    assert out.count("payload-line") < 20  # the preview's first 160 characters, not 5,000 copies
    store = Path(re.search(r"STORE (\S+)", out).group(1))
    assert store.name.startswith("jupyter-scratchpad-") and not store.exists()  # removed at exit
