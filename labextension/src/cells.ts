/**
 * Insert a code cell below a given one and run it: what *Explore* and *Schema* do.
 */

import { INotebookTracker, NotebookActions, NotebookPanel } from '@jupyterlab/notebook';

/** The notebook panel and cell index that hold `node` (a card in an output), if any. */
export function findCell(
  tracker: INotebookTracker,
  node: HTMLElement
): [NotebookPanel, number] | null {
  const panel = tracker.find(p => p.node.contains(node));
  if (!panel) {
    return null;
  }
  const index = panel.content.widgets.findIndex(cell => cell.node.contains(node));
  return index < 0 ? null : [panel, index];
}

/** Insert `code` in a new code cell below cell `index` of `panel`, then run it. */
export async function insertAndRunBelow(
  panel: NotebookPanel,
  index: number,
  code: string
): Promise<void> {
  const notebook = panel.content;
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  NotebookActions.insertBelow(notebook);
  NotebookActions.changeCellType(notebook, 'code');
  const cell = notebook.activeCell;
  if (!cell) {
    throw new Error('the new cell could not be created');
  }
  cell.model.sharedModel.setSource(code);
  await NotebookActions.run(notebook, panel.sessionContext);
}
