/**
 * The explorer outside the notebook's cells: a main-area panel tied to the notebook's kernel,
 * and the renderer of a saved explorer output (the live widget while its kernel has it, else a
 * summary — never "model not found").
 *
 * Both draw the kernel's explorer widget (one anywidget model) with the notebook's own widget
 * renderer, so the widget manager and the kernel are the notebook's.
 */

import { MainAreaWidget } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookPanel } from '@jupyterlab/notebook';
import { IRenderMimeRegistry, MimeModel } from '@jupyterlab/rendermime';
import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Panel, Widget } from '@lumino/widgets';

import { el } from './dom';
import { renderExplorerSummary } from './explorerSummary';
import { KernelHosts } from './hosts';
import { clientFor } from './model';
import {
  EXPLORER_MIME_TYPE,
  IExplorerSummary,
  parseExplorerSummary,
  ScratchpadRequestError
} from './protocol';

export const WIDGET_MIME_TYPE = 'application/vnd.jupyter.widget-view+json';
export const EXPLORER_PANEL_CLASS = 'jp-scratchpad-explorer-panel';
export const EXPLORER_OUTPUT_CLASS = 'jp-scratchpad-explorer-output';

/**
 * A renderer of widget model `modelId` from a notebook's (or console's) renderers, so with its
 * widget manager: null when widgets are not available.
 */
export function widgetRenderer(rendermime: IRenderMimeRegistry, modelId: string): Widget | null {
  if (!rendermime.getFactory(WIDGET_MIME_TYPE)) {
    return null;
  }
  const renderer = rendermime.createRenderer(WIDGET_MIME_TYPE);
  void renderer.renderModel(
    new MimeModel({
      data: { [WIDGET_MIME_TYPE]: { model_id: modelId, version_major: 2, version_minor: 1 } }
    })
  );
  return renderer;
}

/**
 * Renderer of `application/vnd.jupyter.scratchpad.explorer+json`: ranked before the widget
 * view, it shows the summary at once, then the live widget if the notebook's kernel still has
 * that explorer.
 */
export class ExplorerOutput extends Widget implements IRenderMime.IRenderer {
  constructor(
    private readonly tracker: INotebookTracker,
    private readonly hosts: KernelHosts = new KernelHosts(tracker)
  ) {
    super();
    this.addClass(EXPLORER_OUTPUT_CLASS);
  }

  async renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const summary = parseExplorerSummary(model.data[EXPLORER_MIME_TYPE]);
    if (typeof summary === 'string') {
      this.node.replaceChildren(el('div', '', `Not a scratchpad explorer: ${summary}.`));
      return;
    }
    this._summary = summary;
    this.node.dataset.state = 'summary';
    this.node.replaceChildren(renderExplorerSummary(summary, 'Looking for the live explorer…'));
    if (this.isAttached) {
      await this._tryLive();
    }
  }

  protected onAfterAttach(): void {
    // the live view is attached to this node by hand (not a child): it follows this widget
    if (this._live && !this._live.isAttached && this.node.isConnected) {
      Widget.attach(this._live, this.node);
    }
    void this._tryLive();
  }

  protected onBeforeDetach(): void {
    // Detached now, while it is still in the page: a notebook that closes takes this node out of
    // the page before disposing it, and disposing a view still marked attached then threw
    // "Widget is not attached".
    if (this._live?.isAttached) {
      Widget.detach(this._live);
    }
  }

  private async _tryLive(): Promise<void> {
    const summary = this._summary;
    if (!summary || this._live || this._trying) {
      return;
    }
    this._trying = true;
    try {
      const why = await this._showLive(summary);
      if (why) {
        this.node.replaceChildren(renderExplorerSummary(summary, why));
      }
    } finally {
      this._trying = false;
    }
  }

  /** Draw the live widget; else say why not (the summary stays). */
  private async _showLive(summary: IExplorerSummary): Promise<string> {
    const panel = this.tracker.find(p => p.node.contains(this.node));
    const kernel = panel?.sessionContext.session?.kernel;
    if (!panel || !kernel) {
      return 'No kernel: a saved summary.';
    }
    const client = clientFor(kernel);
    if ((await client.connect()) !== 'ready') {
      return 'The kernel has not loaded jupyter-scratchpad: a saved summary.';
    }
    try {
      const found = await client.request('explorer', { model_id: summary.model_id });
      if (!found.live) {
        return 'This explorer is not in the running kernel (it was restarted): a saved summary.';
      }
    } catch (reason) {
      return reason instanceof ScratchpadRequestError && reason.code === 'unknown_type'
        ? 'The kernel runs an older jupyter-scratchpad: a saved summary.'
        : `The kernel did not say (${(reason as Error).message}): a saved summary.`;
    }
    // a notebook opened on a kernel another notebook already uses draws through that one
    const host = this.hosts.commHost(kernel);
    const view = widgetRenderer(
      (host ?? { rendermime: panel.content.rendermime }).rendermime,
      summary.model_id
    );
    if (!view) {
      return 'Jupyter widgets are not installed here: a saved summary.';
    }
    this._live = view;
    this.node.dataset.state = 'live';
    this.node.replaceChildren();
    Widget.attach(view, this.node);
    return '';
  }

  dispose(): void {
    this._live?.dispose();
    this._live = null;
    super.dispose();
  }

  private _summary: IExplorerSummary | null = null;
  private _live: Widget | null = null;
  private _trying = false;
}

/** The factory: before the widget view (rank -10 in a notebook), so a saved output reads. */
export function createExplorerRendererFactory(
  tracker: INotebookTracker,
  hosts: KernelHosts = new KernelHosts(tracker)
): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [EXPLORER_MIME_TYPE],
    defaultRank: -20,
    createRenderer: () => new ExplorerOutput(tracker, hosts)
  };
}

const HEAD_WAIT_MS = 30000;

/** The explorer's Preview tab under `root` when it shows `handle` with nothing in it yet, else null. */
function emptyPreviewOf(root: HTMLElement, handle: string): HTMLElement | null {
  const picker = root.querySelector<HTMLSelectElement>('.jp-scratchpad-x-picker');
  const panel = root.querySelector<HTMLElement>('.jp-scratchpad-x-panel[data-tab="preview"]');
  const result = panel?.querySelector('.jp-scratchpad-x-result');
  if (!picker || picker.value !== handle || !panel || panel.hidden || !result) {
    return null;
  }
  return result.childNodes.length === 0 ? panel : null;
}

/**
 * Show the head of `handle` in the explorer drawn under `root`: the panel opened on the Preview
 * tab with an empty body until Head was clicked. Clicks the page's own Head button once the page
 * is drawn and has `handle` selected (the kernel's selection arrives after the panel opens);
 * leaves a preview already shown alone. Resolves whether it clicked.
 */
export function loadHead(
  root: HTMLElement,
  handle: string,
  waitMs = HEAD_WAIT_MS
): Promise<boolean> {
  return new Promise(resolve => {
    let done = false;
    const finish = (clicked: boolean) => {
      done = true;
      observer.disconnect();
      clearTimeout(timer);
      resolve(clicked);
    };
    const attempt = () => {
      if (done) {
        return;
      }
      const panel = emptyPreviewOf(root, handle);
      const head = panel
        ? [...panel.querySelectorAll<HTMLButtonElement>('button')].find(
            b => b.textContent === 'Head'
          )
        : undefined;
      if (head) {
        finish(true);
        head.click();
      }
    };
    const observer = new MutationObserver(attempt);
    const timer = setTimeout(() => finish(false), waitMs);
    observer.observe(root, { childList: true, subtree: true, attributes: true });
    attempt();
  });
}

/**
 * An explorer panel opened again (Explore on another card): its Preview tab, the last error
 * gone, the head of `handle` loaded again. Resolves whether Head was clicked.
 */
export function showHeadAgain(
  root: HTMLElement,
  handle: string,
  waitMs = HEAD_WAIT_MS
): Promise<boolean> {
  root.querySelector<HTMLButtonElement>('.jp-scratchpad-x-tab[data-tab="preview"]')?.click();
  root.querySelector('.jp-scratchpad-x-notice')?.replaceChildren();
  root
    .querySelector('.jp-scratchpad-x-panel[data-tab="preview"] .jp-scratchpad-x-result')
    ?.replaceChildren();
  return loadHead(root, handle, waitMs);
}

/** One explorer panel per notebook, beside it; it closes when the notebook's kernel goes. */
export class ExplorerPanels {
  constructor(private readonly hosts: KernelHosts) {}

  /** Open (or show) the explorer of `panel`'s kernel on `handle`; throws what went wrong. */
  async open(panel: NotebookPanel, handle: string): Promise<MainAreaWidget> {
    const kernel = panel.sessionContext.session?.kernel;
    if (!kernel) {
      throw new ScratchpadRequestError('not_loaded', 'the notebook has no kernel');
    }
    const result = await clientFor(kernel).request('explore', { handle });
    const existing = this._panels.get(panel);
    if (existing && !existing.isDisposed && existing.id.endsWith(result.model_id)) {
      existing.title.label = `Explore ${result.handle ?? ''}`.trim();
      if (result.handle) {
        void showHeadAgain(existing.content.node, result.handle);
      }
      return existing;
    }
    existing?.dispose();
    // drawn by the widget manager of the notebook (or console) whose connection handles the
    // kernel's comms: this one, or another opened on the same kernel before it
    const host = this.hosts.commHost(kernel);
    const view = widgetRenderer(
      (host ?? { rendermime: panel.content.rendermime }).rendermime,
      result.model_id
    );
    if (!view) {
      throw new ScratchpadRequestError(
        'not_loaded',
        'Jupyter widgets are not installed in JupyterLab'
      );
    }
    const content = new Panel();
    content.addClass(EXPLORER_PANEL_CLASS);
    content.addWidget(view);
    const widget = new MainAreaWidget({ content });
    widget.id = `jp-scratchpad-explorer-${result.model_id}`;
    widget.title.label = `Explore ${result.handle ?? ''}`.trim();
    widget.title.caption = `Scratchpad explorer of ${panel.title.label}`;
    widget.title.closable = true;
    this._panels.set(panel, widget);
    if (result.handle) {
      void loadHead(content.node, result.handle);
    }
    // Tied to the kernel: a restart, another kernel or a closed notebook ends it.
    const end = () => widget.dispose();
    const onStatus = (_: unknown, status: string) => {
      if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
        end();
      }
    };
    panel.sessionContext.kernelChanged.connect(end);
    panel.sessionContext.statusChanged.connect(onStatus);
    panel.disposed.connect(end);
    const owner = host && host.widget !== panel ? host.widget : null;
    owner?.disposed.connect(end); // its widget manager goes with it
    widget.disposed.connect(() => {
      panel.sessionContext.kernelChanged.disconnect(end);
      panel.sessionContext.statusChanged.disconnect(onStatus);
      panel.disposed.disconnect(end);
      owner?.disposed.disconnect(end);
      if (this._panels.get(panel) === widget) {
        this._panels.delete(panel);
      }
    });
    return widget;
  }

  private _panels = new Map<NotebookPanel, MainAreaWidget>();
}
