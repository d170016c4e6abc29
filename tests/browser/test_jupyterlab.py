"""JupyterLab in headless Chromium: the stub card, SQL, the explorer panel, the sidebar, a reload.

Starts ``jupyter lab`` (lab_server.py) and Debian's Chromium through Playwright, both stopped
by the test. Screenshots go to ``$SCRATCHPAD_ARTIFACTS/`` (default ``.ci-artifacts/`` at the top
of the repository): ``jupyterlab-scratchpad.png`` once the explorer panel shows, and
``jupyterlab-scratchpad-end.png`` as the page was left, also when the test fails. With
``SCRATCHPAD_UPDATE_SCREENSHOTS=1`` the first is also written to ``docs/`` (the README's picture).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyter_core.paths import jupyter_path
from lab_server import LabServer, lab_server, write_notebook
from playwright.sync_api import Browser, Page, expect, sync_playwright

pytestmark = pytest.mark.browser

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]
STEP_TIMEOUT_MS = 60_000
ARTIFACTS = Path(os.environ.get("SCRATCHPAD_ARTIFACTS") or Path(__file__).parents[2] / ".ci-artifacts")
SCREENSHOT = ARTIFACTS / "jupyterlab-scratchpad.png"  # card, explorer, sidebar and status bar
END_SCREENSHOT = ARTIFACTS / "jupyterlab-scratchpad-end.png"  # the page as the test left it
DOCS_SCREENSHOT = Path(__file__).parents[2] / "docs" / "jupyterlab-scratchpad.png"
RECORDS = 2500
STUB_MIME = "application/vnd.jupyter.scratchpad.stub+json"

CELLS = [
    "%load_ext jupyter_scratchpad",
    # About 40,000 tokens of JSON: over the default 5,120-token threshold, so it spills.
    "pods = {'kind': 'PodList', 'items': [{'metadata': {'name': f'pod-{i}', 'namespace': 'prod'},\n"
    "        'status': {'phase': 'Running' if i % 7 else 'Pending', 'restarts': i % 5}} for i in range(2500)]}\n"
    "pods",
    # A spilled array of records: one row each in SQL.
    f"[{{'id': i, 'phase': 'Running' if i % 7 else 'Pending'}} for i in range({RECORDS})]",
    "entries = %scratch list\n"
    "records = entries[entries['source_tool'] == 'cell_3']['handle'].iloc[0]\n"
    "# TODO(sql relations): count the rows of the pods' items relation once h.<array> relations exist.\n"
    "counted = get_ipython().run_line_magic('scratch', f'sql SELECT count(*) AS n FROM {records}')\n"
    "print('rows:', counted['n'][0])",
    "%scratch explore",
    # A long stream: its first lines are shown, the rest is held and spilled to a card after them.
    "for i in range(3000):\n    print(f'line {i}', 'lorem ipsum ' * 20)",
]


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    with lab_server(tmp_path_factory.mktemp("lab")) as s:
        write_notebook(s.root / "scratch.ipynb", CELLS)
        yield s


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    if not os.access(CHROMIUM, os.X_OK):
        pytest.fail(f"{CHROMIUM} is missing: apt-get install -y chromium (./scripts/test does)")
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        try:
            yield b
        finally:
            b.close()


@pytest.fixture
def page(browser: Browser, server: LabServer) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1500, "height": 950})
    page = context.new_page()
    page.set_default_timeout(STEP_TIMEOUT_MS)
    expect.set_options(timeout=STEP_TIMEOUT_MS)
    try:
        yield page
    finally:
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(END_SCREENSHOT))
        context.close()


def installed_extension() -> Path:
    """The lab extension JupyterLab will load (the first one on its path, as it picks)."""
    for directory in jupyter_path("labextensions"):
        candidate = Path(directory) / "jupyter-scratchpad" / "package.json"
        if candidate.is_file():
            return candidate
    pytest.fail("the jupyter-scratchpad lab extension is not installed: pip install -e .")


def test_the_installed_extension_is_the_one_built_here() -> None:
    # An editable install copies the build: after `npm run build`, install again to test it.
    built = Path(__file__).parents[2] / "jupyter_scratchpad" / "labextension" / "package.json"
    installed = json.loads(installed_extension().read_text())
    assert installed["name"] == "jupyter-scratchpad"
    if built.is_file():
        assert installed["jupyterlab"]["_build"] == json.loads(built.read_text())["jupyterlab"]["_build"], (
            "the installed lab extension is older than labextension's build: run pip install -e . again"
        )


def open_notebook(page: Page, server: LabServer) -> None:
    page.goto(f"{server.url}/lab/tree/scratch.ipynb?reset")
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("() => window.jupyterapp.restored")
    assert page.evaluate("() => window.jupyterapp.isPluginActivated('jupyter-scratchpad:plugin')"), (
        "the jupyter-scratchpad lab extension is not active: is it installed (jupyter labextension list)?"
    )
    # The kernel is up once the notebook's session is ready and idle.
    page.wait_for_function(
        """() => {
            const w = window.jupyterapp.shell.currentWidget;
            const k = w && w.sessionContext && w.sessionContext.session && w.sessionContext.session.kernel;
            return k && k.status === 'idle';
        }""",
        timeout=STEP_TIMEOUT_MS,
    )


def run_in_kernel(page: Page, code: str) -> None:
    """Run ``code`` in the notebook's kernel (no cell), waiting until it is done."""
    status = page.evaluate(
        """async (code) => {
            const w = [...window.jupyterapp.shell.widgets('main')].find(w => w.context && w.content);
            const reply = await w.sessionContext.session.kernel.requestExecute({ code }).done;
            return reply.content.status;
        }""",
        code,
    )
    assert status == "ok", status


def cell_count(page: Page) -> int:
    return page.locator(".jp-Notebook .jp-Cell").count()


def shut_the_kernels_down(server: LabServer) -> None:
    for session in json.loads(urllib.request.urlopen(f"{server.url}/api/sessions", timeout=10).read()):
        request = urllib.request.Request(f"{server.url}/api/sessions/{session['id']}", method="DELETE")
        urllib.request.urlopen(request, timeout=30).close()


def test_card_sql_explorer_panel_sidebar_and_a_reload(page: Page, server: LabServer) -> None:
    open_notebook(page, server)

    # The sidebar, opened from its tab, says the kernel has not loaded the extension yet.
    page.locator('.jp-SideBar [data-id="jp-scratchpad-sidebar"]').click()
    sidebar = page.locator("#jp-scratchpad-sidebar")
    expect(sidebar).to_be_visible()
    expect(sidebar).to_contain_text("has not loaded jupyter-scratchpad")

    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")

    card = page.locator(".jp-scratchpad-card").first
    expect(card).to_be_visible()
    handle = card.get_attribute("data-handle")
    assert handle and re.fullmatch(r"[a-z0-9_]{1,64}", handle), handle
    expect(card.locator(".jp-scratchpad-card-handle")).to_have_text(handle)
    expect(card.locator(".jp-scratchpad-card-preview")).to_contain_text('"kind": "PodList"')
    expect(card.locator(".jp-scratchpad-card-note")).to_contain_text(re.compile(r"preview: lines 1-\d+ and [\d,]+-25,005 of 25,005"))
    expect(card.locator(".jp-scratchpad-card-schema")).to_contain_text("$.items: array(2,500 items)")
    # The exact token count of this 2 MB spill lands seconds after its card, which showed a "≥"
    # bound until then: the card shows it, and (below) so do the saved file and a reload.
    card_tokens = card.locator('[data-fact="tokens"] .jp-scratchpad-card-value')
    expect(card_tokens).not_to_contain_text("≥")
    exact_tokens = card_tokens.inner_text()

    # %scratch sql over an array relation: every row counted, as a DataFrame (not 200, not 1).
    expect(page.locator(".jp-Notebook .jp-Cell").nth(3).locator(".jp-OutputArea")).to_contain_text(
        f"rows: {RECORDS}")

    # The sidebar lists the handle; the status bar shows the budget.
    expect(sidebar.locator(f'li.jp-scratchpad-entry[data-handle="{handle}"]')).to_be_visible()
    status = page.locator(".jp-scratchpad-status")
    expect(status).to_have_text(re.compile(r"^Scratchpad: [\d,]+ / [\d,]+ tokens$"))

    # The stream's card says where it belongs, as its text/plain part does (it rendered the JSON only).
    where = page.locator(".jp-Notebook .jp-Cell").nth(5).locator(".jp-scratchpad-card .jp-scratchpad-card-where")
    expect(where).to_contain_text(re.compile(r"the rest of the stdout was held after the [\d,]+ lines of it shown above"))

    # The explorer of %scratch explore draws in its cell.
    expect(page.locator(".jp-Notebook .jp-scratchpad-explorer").first).to_be_visible()

    # Explore on the card opens the explorer in a panel beside the notebook: no new cell.
    cells = cell_count(page)
    card.locator('[data-action="explore"]').click()
    panel = page.locator(".jp-scratchpad-explorer-panel")
    explorer = panel.locator(".jp-scratchpad-explorer")
    expect(explorer).to_be_visible()
    assert cell_count(page) == cells
    assert page.locator(".jp-Notebook .jp-scratchpad-explorer-panel").count() == 0  # not inside the notebook
    expect(explorer.locator(".jp-scratchpad-x-picker")).to_have_value(handle)
    # It opens on the Preview tab with the head already shown (it was empty until Head was clicked).
    expect(explorer.locator('.jp-scratchpad-x-panel[data-tab="preview"] .jp-scratchpad-x-result')).to_contain_text(
        '"kind": "PodList"')
    explorer.locator('.jp-scratchpad-x-tab[data-tab="grep"]').click()
    explorer.locator('[data-tab="grep"] input').first.fill('"Pending"')
    explorer.locator('[data-tab="grep"] button', has_text="Search").click()
    expect(explorer.locator("mark").first).to_contain_text('"Pending"')
    expect(explorer.locator('[data-tab="grep"] .jp-scratchpad-x-summary')).to_contain_text("20 of 358")
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))
    if os.environ.get("SCRATCHPAD_UPDATE_SCREENSHOTS") == "1":
        DOCS_SCREENSHOT.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(SCREENSHOT, DOCS_SCREENSHOT)

    # A request waiting on a first SQL load shows the kernel's progress line in the explorer (set
    # here by hand: a real load of this small handle is over before a line would show).
    progress = explorer.locator(".jp-scratchpad-x-progress")
    expect(progress).to_be_hidden()
    line = f"[scratchpad] loading {handle} (2.0 MB) into DuckDB tables for SQL (once per handle): 40 %, 2.5 s"
    run_in_kernel(
        page,
        "from jupyter_scratchpad.widgets import open_explorers\n"
        f"for ex in open_explorers(): ex.progress = {{'text': {line!r}, 'percent': 40.0, 'phase': 'load'}}",
    )
    expect(progress).to_contain_text(line)
    assert progress.locator("progress").get_attribute("value") == "40"
    run_in_kernel(page, "for ex in open_explorers(): ex.progress = {}")
    expect(progress).to_be_hidden()

    # Delete from the sidebar, confirmed in a dialog: the kernel forgets it, the list says so.
    entry = sidebar.locator(f'li.jp-scratchpad-entry[data-handle="{handle}"]')
    entry.locator('[data-action="delete"]').click()
    page.locator(".jp-Dialog .jp-mod-warn").click()
    expect(entry).to_have_count(0)

    # Saved, and opened again after its kernel is gone: the explorer output shows its summary.
    page.evaluate("""async () => {
        const notebook = [...window.jupyterapp.shell.widgets('main')].find(w => w.context && w.content);
        await notebook.context.save();
    }""")
    # The saved file holds the exact count (the kernel's event rewrote the outputs, not just the
    # card), in the stub and in its text and HTML.
    saved_text = (server.root / "scratch.ipynb").read_text(encoding="utf-8")
    assert "still counting" not in saved_text
    stubs = [o["data"] for c in json.loads(saved_text)["cells"] for o in c.get("outputs", [])
             if STUB_MIME in o.get("data", {})]
    saved_stub = next(d for d in stubs if d[STUB_MIME]["handle"] == handle)
    assert saved_stub[STUB_MIME]["tokens_exact"] is True, saved_stub[STUB_MIME]
    counted = f"{saved_stub[STUB_MIME]['tokens']:,}"
    assert exact_tokens.startswith(counted), (exact_tokens, counted)
    assert f"lines, {counted} tokens" in "".join(saved_stub["text/plain"])
    assert f"lines, {counted} tokens" in "".join(saved_stub["text/html"])
    # The open sidebar is remembered by the workspace, and open again after a reload (it came back
    # closed: the extension did not hand it to the layout restorer).
    page.wait_for_function(
        """async () => {
            const w = await window.jupyterapp.serviceManager.workspaces.fetch('default');
            return JSON.stringify(w.data).includes('jp-scratchpad-sidebar');
        }""",
        timeout=STEP_TIMEOUT_MS,
    )
    page.reload()
    page.wait_for_function("() => window.jupyterapp !== undefined")
    page.evaluate("() => window.jupyterapp.restored")
    expect(page.locator("#jp-scratchpad-sidebar")).to_be_visible()

    shut_the_kernels_down(server)
    open_notebook(page, server)
    saved = page.locator(".jp-Notebook .jp-scratchpad-explorer-output").first
    expect(saved.locator(".jp-scratchpad-explorer-summary")).to_contain_text("Scratchpad explorer — run notebook")
    expect(saved).to_contain_text("a saved summary")
    expect(page.locator(".jp-Notebook")).not_to_contain_text("model not found")
    # The card, rendered again from the saved notebook, shows the exact count (not "≥ 5,120").
    reopened = page.locator(f'.jp-Notebook .jp-scratchpad-card[data-handle="{handle}"]').first
    expect(reopened.locator('[data-fact="tokens"] .jp-scratchpad-card-value')).to_have_text(exact_tokens)
