"""JupyterLab in headless Chromium: the stub card, Explore, the sidebar and the budget item.

Starts ``jupyter lab`` (lab_server.py) and Debian's Chromium through Playwright, both stopped
by the test. Screenshots go to ``$SCRATCHPAD_ARTIFACTS/`` (default ``.ci-artifacts/`` at the top
of the repository): ``jupyterlab-scratchpad.png`` once the explorer shows, and
``jupyterlab-scratchpad-end.png`` as the page was left, also when the test fails.
"""

from __future__ import annotations

import json
import os
import re
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

CELLS = [
    "%load_ext jupyter_scratchpad",
    # About 40,000 tokens of JSON: over the default 5,120-token threshold, so it spills.
    "pods = {'kind': 'PodList', 'items': [{'metadata': {'name': f'pod-{i}', 'namespace': 'prod'},\n"
    "        'status': {'phase': 'Running' if i % 7 else 'Pending', 'restarts': i % 5}} for i in range(2500)]}\n"
    "pods",
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


def test_card_explore_sidebar_and_status(page: Page, server: LabServer) -> None:
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
    expect(card.locator(".jp-scratchpad-card-note")).to_contain_text("lines not shown")
    expect(card.locator(".jp-scratchpad-card-schema")).to_contain_text("$.items: array(2,500 items)")

    # The sidebar lists the handle; the status bar shows the budget.
    expect(sidebar.locator(f'li.jp-scratchpad-entry[data-handle="{handle}"]')).to_be_visible()
    status = page.locator(".jp-scratchpad-status")
    expect(status).to_have_text(re.compile(r"^Scratchpad: [\d,]+ / [\d,]+ tokens$"))

    # Explore inserts `%scratch explore HANDLE` below the card's cell, runs it: the explorer shows.
    card.locator('[data-action="explore"]').click()
    explore_cell = page.locator(".jp-Notebook .jp-Cell").nth(2)
    expect(explore_cell.locator(".jp-InputArea-editor")).to_contain_text(f"%scratch explore {handle}")
    expect(page.locator(".jp-scratchpad-explorer").first).to_be_visible()
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENSHOT))

    # Delete from the sidebar, confirmed in a dialog: the kernel forgets it, the list says so.
    entry = sidebar.locator(f'li.jp-scratchpad-entry[data-handle="{handle}"]')
    entry.locator('[data-action="delete"]').click()
    page.locator(".jp-Dialog .jp-mod-warn").click()
    expect(entry).to_have_count(0)
    expect(sidebar).to_contain_text("Nothing spilled yet.")
