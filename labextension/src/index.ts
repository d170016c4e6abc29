/**
 * jupyter-scratchpad for JupyterLab 4: the stub card, the scratchpad sidebar and the budget item.
 */

import { ILayoutRestorer, JupyterFrontEnd, JupyterFrontEndPlugin } from '@jupyterlab/application';
import { Clipboard, Dialog, ICommandPalette, Notification, showDialog } from '@jupyterlab/apputils';
import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';
import type { ICodeCellModel } from '@jupyterlab/cells';
import { IRenderMimeRegistry } from '@jupyterlab/rendermime';
import { IStatusBar } from '@jupyterlab/statusbar';

import { createStubRendererFactory, ICardActions } from './card';
import { findCell, insertAndRunBelow } from './cells';
import { createExplorerRendererFactory, ExplorerPanels } from './explorer';
import { KernelHosts } from './hosts';
import { scratchpadIcon } from './icon';
import { clientFor, onTokens, ScratchpadModel, setCommKernelFinder } from './model';
import { isHandle, ScratchpadRequestError, Target } from './protocol';
import { ScratchpadSidebar } from './sidebar';
import { ISidebarActions } from './sidebarView';
import { BudgetStatus } from './status';
import { applyTokensToOutputs } from './tokens';

export * from './protocol';

const PLUGIN_ID = 'jupyter-scratchpad:plugin';
const EXTEND_TTL_S = 3600;
// what the explorer's page (explorer.js) dispatches after a read charged to the budget
const CHARGED_EVENT = 'jp-scratchpad-charged';

namespace CommandIDs {
  export const explore = 'scratchpad:explore';
  export const schema = 'scratchpad:schema';
  export const openSidebar = 'scratchpad:open-sidebar';
  export const refresh = 'scratchpad:refresh';
}

function warn(message: string): void {
  Notification.warning(message, { autoClose: 5000 });
}

/**
 * The notebook and cell a card's action is about: the card's own cell, else the active notebook's
 * active cell; null (after saying why) for a bad handle or no notebook.
 */
function cellFor(
  tracker: INotebookTracker,
  handle: string,
  what: string,
  node?: HTMLElement
): [NotebookPanel, number] | null {
  if (!isHandle(handle)) {
    warn(`Not a scratchpad handle: ${handle}`);
    return null;
  }
  const found = node ? findCell(tracker, node) : null;
  const panel = found ? found[0] : tracker.currentWidget;
  if (!panel) {
    warn(`Open a notebook to ${what} ${handle}.`);
    return null;
  }
  return [panel, found ? found[1] : panel.content.activeCellIndex];
}

/** Open the kernel's explorer on `handle` in a panel beside the notebook (no new cell). */
async function explore(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  panels: ExplorerPanels,
  handle: string,
  node?: HTMLElement
): Promise<void> {
  const target = cellFor(tracker, handle, 'explore', node);
  if (!target) {
    return;
  }
  const notebook = target[0];
  try {
    const widget = await panels.open(notebook, handle);
    if (!widget.isAttached) {
      app.shell.add(widget, 'main', { mode: 'split-right', ref: notebook.id });
    }
    app.shell.activateById(widget.id);
  } catch (reason) {
    warn(`Could not open the explorer: ${(reason as Error).message}`);
  }
}

/**
 * Run `%scratch schema HANDLE` where the card is: in a console, in that console; in a notebook,
 * in a new cell below the card's cell (or the active one). Checked first, as Explore is: with
 * no kernel, a kernel without the extension or without that handle, a toast says why, and no
 * kernel is started, no document edited.
 */
async function schemaHere(
  tracker: INotebookTracker,
  hosts: KernelHosts,
  handle: string,
  node?: HTMLElement
): Promise<void> {
  const code = `%scratch schema ${handle}`;
  const consolePanel = node && isHandle(handle) ? hosts.consoleHolding(node) : null;
  const target = consolePanel ? null : cellFor(tracker, handle, 'run %scratch schema on', node);
  if (!consolePanel && !target) {
    return;
  }
  const session = consolePanel ? consolePanel.sessionContext : target![0].sessionContext;
  const where = consolePanel ? 'the console' : 'the notebook';
  const kernel = session.session?.kernel;
  const cannot = `Could not run ${code}`;
  if (!kernel) {
    warn(`${cannot}: ${where} has no kernel (a handle lives in the kernel that spilled it).`);
    return;
  }
  const client = clientFor(kernel);
  if ((await client.connect()) !== 'ready') {
    warn(`${cannot}: ${client.detail}.`);
    return;
  }
  try {
    await client.request('stub', { handle }); // not_found: expired, deleted or another run's
  } catch (reason) {
    warn(`${cannot}: ${(reason as Error).message}`);
    return;
  }
  if (consolePanel) {
    await consolePanel.console.inject(code);
  } else {
    await insertAndRunBelow(target![0], target![1], code);
  }
}

function describe(target: Target): string {
  return 'handle' in target ? `spilled output ${target.handle}` : `note ${target.key}`;
}

function sidebarActions(app: JupyterFrontEnd, model: ScratchpadModel): ISidebarActions {
  const call = async (type: 'delete' | 'extend', target: Target) => {
    const client = model.client;
    try {
      if (!client) {
        throw new ScratchpadRequestError('not_loaded', 'the notebook has no kernel');
      }
      if (type === 'delete') {
        await client.request('delete', target);
      } else {
        await client.request('extend', { ...target, ttl_s: EXTEND_TTL_S });
      }
    } catch (reason) {
      warn(`Could not ${type} the ${describe(target)}: ${(reason as Error).message}`);
    }
    await model.refreshNow();
  };
  return {
    explore: handle => void app.commands.execute(CommandIDs.explore, { handle }),
    extend: target => void call('extend', target),
    remove: target =>
      void showDialog({
        title: 'Delete from the scratchpad?',
        body: `The ${describe(target)} will be deleted from the kernel's store.`,
        buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Delete' })]
      }).then(result => (result.button.accept ? call('delete', target) : undefined)),
    refresh: () => void model.refreshNow(true)
  };
}

function addCommands(
  app: JupyterFrontEnd,
  tracker: INotebookTracker,
  model: ScratchpadModel,
  sidebar: ScratchpadSidebar,
  panels: ExplorerPanels,
  hosts: KernelHosts
): void {
  app.commands.addCommand(CommandIDs.explore, {
    label: 'Scratchpad: Explore a Handle',
    execute: args => explore(app, tracker, panels, String(args.handle ?? ''))
  });
  app.commands.addCommand(CommandIDs.schema, {
    label: 'Scratchpad: Schema of a Handle',
    execute: args => schemaHere(tracker, hosts, String(args.handle ?? ''))
  });
  app.commands.addCommand(CommandIDs.openSidebar, {
    label: 'Scratchpad: Show the Sidebar',
    execute: () => app.shell.activateById(sidebar.id)
  });
  app.commands.addCommand(CommandIDs.refresh, {
    label: 'Scratchpad: Refresh',
    execute: () => model.refreshNow(true)
  });
}

function followNotebooks(tracker: INotebookTracker, model: ScratchpadModel): void {
  const follow = (panel: NotebookPanel | null) => {
    model.setSession(panel ? panel.sessionContext : null, panel ? panel.title.label : null);
    if (panel) {
      void panel.sessionContext.ready.then(() => {
        if (tracker.currentWidget === panel) {
          model.refresh();
        }
      });
    }
  };
  tracker.currentChanged.connect((_, panel) => follow(panel));
  follow(tracker.currentWidget);
  NotebookActions.executed.connect((_, { notebook }) => {
    if (tracker.currentWidget?.content === notebook) {
      model.refresh();
    }
  });
}

/** The code cells' outputs of every notebook attached to kernel `kernelId`. */
function outputsOn(tracker: INotebookTracker, kernelId: string): ICodeCellModel['outputs'][] {
  const found: ICodeCellModel['outputs'][] = [];
  tracker.forEach(panel => {
    if (panel.sessionContext.session?.kernel?.id === kernelId && panel.model) {
      for (const cell of panel.model.cells) {
        if (cell.type === 'code') {
          found.push((cell as ICodeCellModel).outputs);
        }
      }
    }
  });
  return found;
}

// Landed counts kept per kernel (the newest few hundred handles), for stubs that arrive late.
const LANDED_KEPT = 500;

/**
 * A landed exact token count rewrites the stub outputs of its handle in every notebook attached
 * to that kernel: the card re-renders from the model, and a save keeps the exact count. The
 * count of an output a little over 64 KB can land before its stub reaches the notebook (both come
 * on IOPub, the event from the counting thread): a cell's outputs get the counts that landed by
 * the time it finished.
 */
function updateOutputsOnTokens(tracker: INotebookTracker): void {
  const landed = new Map<string, Map<string, number>>();
  onTokens((kernel, event) => {
    const counts = landed.get(kernel.id) ?? new Map<string, number>();
    landed.set(kernel.id, counts);
    counts.set(event.handle, event.tokens);
    if (counts.size > LANDED_KEPT) {
      counts.delete(counts.keys().next().value!);
    }
    const one = new Map([[event.handle, event.tokens]]);
    for (const outputs of outputsOn(tracker, kernel.id)) {
      applyTokensToOutputs(outputs, one);
    }
  });
  NotebookActions.executed.connect((_, { notebook, cell }) => {
    const panel = tracker.find(p => p.content === notebook);
    const counts = landed.get(panel?.sessionContext.session?.kernel?.id ?? '');
    if (counts && cell.model.type === 'code') {
      applyTokensToOutputs((cell.model as ICodeCellModel).outputs, counts);
    }
  });
}

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'Stub cards, a scratchpad sidebar and a token-budget status item.',
  autoStart: true,
  requires: [INotebookTracker, IRenderMimeRegistry],
  optional: [IStatusBar, ICommandPalette, ILayoutRestorer],
  activate: (
    app: JupyterFrontEnd,
    tracker: INotebookTracker,
    rendermime: IRenderMimeRegistry,
    statusBar: IStatusBar | null,
    palette: ICommandPalette | null,
    restorer: ILayoutRestorer | null
  ) => {
    const hosts = new KernelHosts(tracker, function* () {
      for (const area of ['main', 'down'] as const) {
        yield* app.shell.widgets(area);
      }
    });
    // a second notebook on a kernel already in use talks through the first one's connection
    setCommKernelFinder(id => hosts.commKernel(id));
    const panels = new ExplorerPanels(hosts);
    const cardActions: ICardActions = {
      explore: (handle, node) => explore(app, tracker, panels, handle, node),
      schema: (handle, node) => schemaHere(tracker, hosts, handle, node),
      copyHandle: handle => {
        Clipboard.copyToSystem(handle);
        Notification.info(`Copied ${handle}`, { autoClose: 2000 });
      }
    };
    // Notebooks clone this registry when they open, so the card reaches every notebook.
    rendermime.addFactory(createStubRendererFactory(cardActions));
    rendermime.addFactory(createExplorerRendererFactory(tracker, hosts));

    let sidebar: ScratchpadSidebar | null = null;
    const model = new ScratchpadModel(() => sidebar?.isVisible ?? false);
    sidebar = new ScratchpadSidebar(model, sidebarActions(app, model));
    sidebar.title.icon = scratchpadIcon;
    app.shell.add(sidebar, 'left', { rank: 650 });
    // the workspace remembers it: open before a reload, open after (it came back closed)
    restorer?.add(sidebar, sidebar.id);

    addCommands(app, tracker, model, sidebar, panels, hosts);
    for (const command of Object.values(CommandIDs)) {
      palette?.addItem({ command, category: 'Scratchpad' });
    }
    if (statusBar) {
      statusBar.registerStatusItem('jupyter-scratchpad:budget', {
        item: new BudgetStatus(model),
        align: 'left',
        rank: 4,
        isActive: () => model.snapshot.state === 'ready' && model.snapshot.budget !== null,
        activeStateChanged: model.changed as never
      });
    }
    followNotebooks(tracker, model);
    // a read "as the model" in an explorer was charged: the status bar and sidebar follow now
    document.addEventListener(CHARGED_EVENT, () => model.refresh());
    updateOutputsOnTokens(tracker);
  }
};

export default plugin;
