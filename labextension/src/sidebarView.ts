/**
 * The sidebar's DOM, built from a snapshot: a pure function, so it is tested without a kernel.
 */

import { formatBudget, formatBytes, formatCount, formatTimeLeft } from './format';
import { ISnapshot } from './model';
import { Target } from './protocol';

export interface ISidebarActions {
  explore(handle: string): void;
  extend(target: Target): void;
  remove(target: Target): void;
  refresh(): void;
}

function el<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  className: string,
  text?: string
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  node.className = className;
  if (text !== undefined) {
    node.textContent = text;
  }
  return node;
}

function action(
  label: string,
  name: string,
  title: string,
  onClick: () => void
): HTMLButtonElement {
  const node = el('button', 'jp-scratchpad-sidebar-action jp-mod-styled', label);
  node.type = 'button';
  node.title = title;
  node.dataset.action = name;
  node.addEventListener('click', onClick);
  return node;
}

function row(cells: (string | HTMLElement)[], className: string): HTMLTableRowElement {
  const tr = el('tr', className);
  for (const cell of cells) {
    const td = el('td', '');
    td.append(cell);
    tr.append(td);
  }
  return tr;
}

function table(headings: string[], className: string): [HTMLTableElement, HTMLTableSectionElement] {
  const t = el('table', `jp-scratchpad-sidebar-table ${className}`);
  const head = el('tr', '');
  for (const h of headings) {
    head.append(el('th', '', h));
  }
  const thead = el('thead', '');
  thead.append(head);
  const tbody = el('tbody', '');
  t.append(thead, tbody);
  return [t, tbody];
}

const NOT_READY: Record<string, string> = {
  'no-notebook': 'Open a notebook to see its scratchpad.',
  'no-kernel': 'This notebook has no kernel.',
  idle: 'Run a cell to connect to the kernel.',
  connecting: 'Connecting to the kernel…',
  'not-loaded':
    'The kernel has not loaded jupyter-scratchpad. Run %load_ext jupyter_scratchpad in a cell.',
  incompatible: 'The kernel runs another version of jupyter-scratchpad.',
  unsupported: 'This kernel does not support comms.',
  error: 'The kernel did not answer.'
};

/** The sidebar's content for `snapshot` at `now` (ms since the epoch). */
export function renderSidebar(
  snapshot: ISnapshot,
  actions: ISidebarActions,
  now: number
): HTMLElement {
  const root = el('div', 'jp-scratchpad-sidebar-content');
  const header = el('div', 'jp-scratchpad-sidebar-header');
  header.append(
    el('span', 'jp-scratchpad-sidebar-notebook', snapshot.notebook ?? 'No notebook'),
    action('Refresh', 'refresh', 'Ask the kernel again', () => actions.refresh())
  );
  root.append(header);
  root.dataset.state = snapshot.state;

  if (snapshot.state !== 'ready') {
    const message = el(
      'div',
      'jp-scratchpad-sidebar-message',
      NOT_READY[snapshot.state] ?? snapshot.state
    );
    message.title = snapshot.detail;
    root.append(message);
    return root;
  }
  if (snapshot.budget) {
    const b = snapshot.budget;
    const budget = el(
      'div',
      'jp-scratchpad-sidebar-budget',
      `Budget: ${formatBudget(b.used, b.usable)}`
    );
    budget.title =
      `${b.model}: ${formatCount(b.remaining)} tokens left of a ${formatCount(b.context_window)} window; ` +
      `${formatCount(b.tokens_intercepted)} intercepted, ${formatCount(b.tokens_extracted)} extracted`;
    root.append(budget);
  }
  if (snapshot.error) {
    root.append(el('div', 'jp-scratchpad-sidebar-error', snapshot.error));
  }
  const list = snapshot.list;
  if (!list) {
    return root;
  }
  const elapsed_s = Math.max(0, (now - snapshot.listReceivedAt) / 1000);
  root.append(
    el('div', 'jp-scratchpad-sidebar-section', `Spilled outputs (${list.total_entries})`)
  );
  if (list.entries.length === 0) {
    root.append(el('div', 'jp-scratchpad-sidebar-empty', 'Nothing spilled yet.'));
  } else {
    const [t, body] = table(
      ['handle', 'tool', 'size', 'tokens', 'left', ''],
      'jp-scratchpad-entries'
    );
    for (const e of list.entries) {
      const buttons = el('span', 'jp-scratchpad-sidebar-actions');
      buttons.append(
        action('Explore', 'explore', `Insert and run %scratch explore ${e.handle}`, () =>
          actions.explore(e.handle)
        ),
        action('Extend', 'extend', 'Expire one hour from now', () =>
          actions.extend({ handle: e.handle })
        ),
        action('Delete', 'delete', 'Delete this spilled output', () =>
          actions.remove({ handle: e.handle })
        )
      );
      const handle = el('code', 'jp-scratchpad-sidebar-handle', e.handle);
      const tr = row(
        [
          handle,
          e.source_tool ?? '',
          formatBytes(e.size),
          formatCount(e.tokens),
          formatTimeLeft(e.ttl_left_s - elapsed_s),
          buttons
        ],
        'jp-scratchpad-entry'
      );
      tr.dataset.handle = e.handle;
      body.append(tr);
    }
    root.append(t);
  }
  root.append(el('div', 'jp-scratchpad-sidebar-section', `Notes (${list.total_notes})`));
  if (list.notes.length === 0) {
    root.append(el('div', 'jp-scratchpad-sidebar-empty', 'No notes.'));
  } else {
    const [t, body] = table(['key', 'size', 'left', 'value', ''], 'jp-scratchpad-notes');
    for (const n of list.notes) {
      const buttons = el('span', 'jp-scratchpad-sidebar-actions');
      buttons.append(
        action('Extend', 'extend', 'Expire one hour from now', () =>
          actions.extend({ key: n.key })
        ),
        action('Delete', 'delete', 'Delete this note', () => actions.remove({ key: n.key }))
      );
      const tr = row(
        [
          el('code', '', n.key),
          formatBytes(n.size),
          formatTimeLeft(n.ttl_left_s - elapsed_s),
          el('span', 'jp-scratchpad-note-preview', n.preview),
          buttons
        ],
        'jp-scratchpad-note'
      );
      tr.dataset.key = n.key;
      body.append(tr);
    }
    root.append(t);
  }
  return root;
}
