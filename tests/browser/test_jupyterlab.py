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
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright

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


def open_notebook(page: Page, server: LabServer, path: str = "scratch.ipynb") -> None:
    page.goto(f"{server.url}/lab/tree/{path}?reset")
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


# -- kernels shared, restarted, stopped; the sidebar's delete; Schema where the card is ---------

# Two spills (records, then words) and an explorer in a cell.
SMALL_CELLS = [
    "%load_ext jupyter_scratchpad",
    "[{'id': i, 'phase': 'Running' if i % 7 else 'Pending'} for i in range(2500)]",
    "[{'n': i, 'word': 'alpha beta gamma ' * 3} for i in range(3000)]",
    "%scratch explore",
]
GONE = "The kernel restarted (or stopped): this explorer is no longer live. Run %scratch explore again."
NOTEBOOK_JS = "(path) => [...window.jupyterapp.shell.widgets('main')].find(w => w.context && w.content && w.context.path === path)"


def console_errors(page: Page) -> list[str]:
    """The page's console errors and uncaught exceptions from now on (a list that fills up)."""
    errors: list[str] = []
    page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    page.on("pageerror", lambda e: errors.append(str(e)))
    return errors


def in_notebook(page: Page, path: str, body: str, arg: object = None) -> object:
    """Evaluate ``body`` (an async function body of ``nb``, the notebook panel of ``path``, and ``arg``)."""
    return page.evaluate(
        f"async ([path, arg]) => {{ const nb = ({NOTEBOOK_JS})(path); {body} }}", [path, arg])


def wait_idle(page: Page, path: str) -> None:
    page.wait_for_function(
        f"""(path) => {{
            const nb = ({NOTEBOOK_JS})(path);
            const k = nb && nb.sessionContext.session && nb.sessionContext.session.kernel;
            return k && k.status === 'idle';
        }}""",
        arg=path,
        timeout=STEP_TIMEOUT_MS,
    )


def open_and_run(page: Page, server: LabServer, path: str, cells: list[str], cards: int) -> list[str]:
    """Write ``path``, open it, run it; the handles of its ``cards`` cards, oldest first."""
    write_notebook(server.root / path, cells)
    open_notebook(page, server, path)
    in_notebook(page, path, "await window.jupyterapp.commands.execute('notebook:run-all-cells');")
    found = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-scratchpad-card")
    expect(found).to_have_count(cards)
    return [found.nth(i).get_attribute("data-handle") or "" for i in range(cards)]


def toast(page: Page) -> Locator:
    return page.locator(".Toastify")


def test_a_second_notebook_on_a_kernel_in_use_talks_through_the_first(page: Page, server: LabServer) -> None:
    # JupyterLab hands a kernel's comms to the first connection only: the second notebook's
    # sidebar, status bar, Explore and %scratch explore go through the first one's.
    write_notebook(server.root / "second.ipynb", ["%scratch explore"])
    records, words = open_and_run(page, server, "first.ipynb", SMALL_CELLS, 2)
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:open', {path: 'second.ipynb'}); }")
    wait_idle(page, "second.ipynb")
    first_kernel = in_notebook(page, "first.ipynb", "return nb.sessionContext.session.kernel.id;")
    in_notebook(page, "second.ipynb", """
        window.jupyterapp.shell.activateById(nb.id);
        await nb.sessionContext.changeKernel({id: arg});
    """, first_kernel)
    assert in_notebook(page, "second.ipynb", "return nb.sessionContext.session.kernel.handleComms;") is False

    page.locator('.jp-SideBar [data-id="jp-scratchpad-sidebar"]').click()
    sidebar = page.locator("#jp-scratchpad-sidebar")
    expect(sidebar).to_contain_text("second.ipynb")
    expect(sidebar.locator(f'li.jp-scratchpad-entry[data-handle="{words}"]')).to_be_visible()
    expect(sidebar).not_to_contain_text("does not support comms")
    expect(page.locator(".jp-scratchpad-status")).to_have_text(re.compile(r"^Scratchpad: [\d,]+ / [\d,]+ tokens$"))

    # Explore from the sidebar, the second notebook active: a panel on that handle, its head shown.
    sidebar.locator(f'li.jp-scratchpad-entry[data-handle="{records}"] [data-action="explore"]').click()
    explorer = page.locator(".jp-scratchpad-explorer-panel .jp-scratchpad-explorer")
    expect(explorer.locator(".jp-scratchpad-x-picker")).to_have_value(records)
    expect(explorer.locator('.jp-scratchpad-x-panel[data-tab="preview"] .jp-scratchpad-x-result')).to_contain_text(
        '"phase"')

    # %scratch explore in the second notebook draws the live explorer, not only its text.
    in_notebook(page, "second.ipynb", "await window.jupyterapp.commands.execute('notebook:run-all-cells');")
    live = page.locator('.jp-scratchpad-explorer-output[data-state="live"]')
    expect(live).to_have_count(2)  # the first notebook's and the second's


def test_the_sidebars_delete_moves_the_panel_and_explore_again_shows_the_head(
    page: Page, server: LabServer
) -> None:
    records, words = open_and_run(page, server, "panel.ipynb", SMALL_CELLS, 2)
    cards = page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-scratchpad-card")
    cards.nth(0).locator('[data-action="explore"]').click()
    explorer = page.locator(".jp-scratchpad-explorer-panel .jp-scratchpad-explorer")
    picker = explorer.locator(".jp-scratchpad-x-picker")
    expect(picker).to_have_value(records)

    # Deleted from the sidebar (no cell runs): the open panel moves to the newest live handle.
    page.locator('.jp-SideBar [data-id="jp-scratchpad-sidebar"]').click()
    sidebar = page.locator("#jp-scratchpad-sidebar")
    sidebar.locator(f'li.jp-scratchpad-entry[data-handle="{records}"] [data-action="delete"]').click()
    page.locator(".jp-Dialog .jp-mod-warn").click()
    expect(sidebar.locator(f'li.jp-scratchpad-entry[data-handle="{records}"]')).to_have_count(0)
    expect(picker).to_have_value(words)
    expect(picker.locator(f'option[value="{records}"]')).to_have_count(0)

    # An SQL error, then Explore on a card again: Preview, the error gone, the head shown.
    explorer.locator('.jp-scratchpad-x-tab[data-tab="sql"]').click()
    explorer.locator('[data-tab="sql"] textarea').fill("SELECT * FROM no_such_relation")
    explorer.locator('[data-tab="sql"] button', has_text="Run").click()
    notice = explorer.locator(".jp-scratchpad-x-notice")
    expect(notice).to_contain_text("sql_error")
    cards.nth(1).locator('[data-action="explore"]').click()
    expect(explorer.locator('.jp-scratchpad-x-panel[data-tab="preview"]')).to_be_visible()
    expect(explorer.locator('.jp-scratchpad-x-panel[data-tab="sql"]')).to_be_hidden()
    expect(notice).to_have_text("")
    expect(explorer.locator('.jp-scratchpad-x-panel[data-tab="preview"] .jp-scratchpad-x-result')).to_contain_text(
        "alpha beta gamma")

    # A read as the model is charged: the status bar follows the explorer's meter, no cell run.
    meter = explorer.locator(".jp-scratchpad-x-meter-text")
    before = meter.inner_text()
    explorer.locator('[data-role="as-agent"]').check()
    explorer.locator('[data-tab="preview"] button', has_text="Head").click()
    expect(meter).not_to_have_text(before)
    used = re.search(r"used ([\d,]+) /", meter.inner_text())
    assert used, meter.inner_text()
    expect(page.locator(".jp-scratchpad-status")).to_have_text(re.compile(rf"^Scratchpad: {used.group(1)} / "))

    # Every spill deleted: the sidebar does not say "nothing spilled yet".
    sidebar.locator(f'li.jp-scratchpad-entry[data-handle="{words}"] [data-action="delete"]').click()
    page.locator(".jp-Dialog .jp-mod-warn").click()
    expect(sidebar).to_contain_text("No live spilled outputs.")


def test_schema_checks_first_and_runs_in_the_console_it_was_clicked_in(page: Page, server: LabServer) -> None:
    (records,) = open_and_run(page, server, "schema.ipynb", SMALL_CELLS[:2], 1)
    in_notebook(page, "schema.ipynb", "await nb.context.save();")
    shutil.copyfile(server.root / "schema.ipynb", server.root / "copied.ipynb")

    # A card in a console (on the notebook's kernel): Schema runs there, the notebook is untouched.
    in_notebook(page, "schema.ipynb", """
        window.jupyterapp.shell.activateById(nb.id);
        await window.jupyterapp.commands.execute('notebook:create-console');
    """)
    console = page.locator(".jp-ConsolePanel")
    expect(console).to_be_visible()
    page.evaluate("""async () => {
        const c = [...window.jupyterapp.shell.widgets('main')].find(w => w.console);
        await c.sessionContext.ready;
        await c.console.inject("[{'c': i, 'pad': 'z' * 10} for i in range(6000)]");
    }""")
    console_card = console.locator(".jp-scratchpad-card")
    expect(console_card).to_have_count(1)
    console_handle = console_card.get_attribute("data-handle")
    console_card.locator('[data-action="schema"]').click()
    expect(console.locator(".jp-CodeConsole-content")).to_contain_text(f"%scratch schema {console_handle}")
    expect(console.locator(".jp-CodeConsole-content .jp-OutputArea").last).to_contain_text("array")
    assert in_notebook(page, "schema.ipynb", "return nb.content.widgets.length;") == 2
    assert in_notebook(page, "schema.ipynb", "return nb.context.model.dirty;") is False

    # The same card in a notebook whose kernel has not loaded the extension: a toast, no new cell.
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:open', {path: 'copied.ipynb'}); }")
    wait_idle(page, "copied.ipynb")
    copied_id = in_notebook(page, "copied.ipynb", "return nb.id;")
    copied = page.locator(f'[id="{copied_id}"] .jp-scratchpad-card[data-handle="{records}"]')
    copied.locator('[data-action="schema"]').click()
    expect(toast(page)).to_contain_text(f"Could not run %scratch schema {records}: the kernel has not loaded")
    assert in_notebook(page, "copied.ipynb", "return nb.content.widgets.length;") == 2

    # No kernel at all: a toast; no kernel is started, no cell added.
    in_notebook(page, "copied.ipynb", "await nb.sessionContext.shutdown();")
    copied.locator('[data-action="schema"]').click()
    expect(toast(page)).to_contain_text("the notebook has no kernel")
    page.wait_for_timeout(3000)
    assert in_notebook(page, "copied.ipynb", "return Boolean(nb.sessionContext.session);") is False
    assert in_notebook(page, "copied.ipynb", "return nb.content.widgets.length;") == 2
    assert in_notebook(page, "copied.ipynb", "return nb.context.model.dirty;") is False


def test_a_restart_marks_the_explorer_in_a_cell_and_closing_the_notebook_logs_no_error(
    page: Page, server: LabServer
) -> None:
    errors = console_errors(page)
    open_and_run(page, server, "restart.ipynb", SMALL_CELLS, 2)
    in_cell = page.locator('.jp-scratchpad-explorer-output[data-state="live"] .jp-scratchpad-explorer')
    expect(in_cell).to_be_visible()
    in_notebook(page, "restart.ipynb", "await nb.sessionContext.restartKernel();")
    expect(in_cell.locator(".jp-scratchpad-x-notice")).to_have_text(GONE)
    expect(in_cell.locator('[data-tab="preview"] button', has_text="Head")).to_be_disabled()
    wait_idle(page, "restart.ipynb")

    # Again with the extension, an explorer panel open: closing the notebook ends both quietly.
    in_notebook(page, "restart.ipynb", "await window.jupyterapp.commands.execute('notebook:run-all-cells');")
    expect(page.locator('.jp-scratchpad-explorer-output[data-state="live"]')).to_have_count(1)
    page.locator(".jp-NotebookPanel:visible .jp-Notebook .jp-scratchpad-card").first.locator(
        '[data-action="explore"]').click()
    panel = page.locator(".jp-scratchpad-explorer-panel .jp-scratchpad-explorer")
    expect(panel).to_be_visible()
    in_notebook(page, "restart.ipynb", "await nb.context.save(); nb.close();")
    expect(page.locator(".jp-scratchpad-explorer-panel")).to_have_count(0)
    expect(page.locator(".jp-NotebookPanel")).to_have_count(0)
    page.wait_for_timeout(1000)
    assert not [e for e in errors if "Widget is not attached" in e or "Cannot send" in e], errors
