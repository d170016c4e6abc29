/**
 * The sidebar's DOM, built from a snapshot: a pure function, so it is tested without a kernel.
 */

import { el } from './dom';
import { formatBudget, formatBytes, formatCount, formatTimeLeft } from './format';
import { ISnapshot } from './model';
import { Target } from './protocol';

export interface ISidebarActions {
  explore(handle: string): void;
  extend(target: Target): void;
  remove(target: Target): void;
  refresh(): void;
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

/** One entry or note: its name, a line of facts, and its actions (fits a narrow panel). */
function item(
  className: string,
  name: string,
  facts: [string, string][],
  buttons: HTMLButtonElement[]
): HTMLLIElement {
  const node = el('li', `jp-scratchpad-item ${className}`);
  const title = el('code', 'jp-scratchpad-item-name', name);
  title.title = name;
  const factsLine = el('div', 'jp-scratchpad-item-facts');
  for (const [field, value] of facts) {
    const span = el('span', 'jp-scratchpad-item-fact', value);
    span.dataset.field = field;
    factsLine.append(span);
  }
  const bar = el('div', 'jp-scratchpad-sidebar-actions');
  bar.append(...buttons);
  node.append(title, factsLine, bar);
  return node;
}

function timeLeft(seconds: number): string {
  return seconds > 0 ? `${formatTimeLeft(seconds)} left` : 'expired';
}

const NOT_READY: Record<string, string> = {
  'no-notebook': 'Open a notebook to see its scratchpad.',
  'no-kernel': 'This notebook has no kernel.',
  idle: 'Run a cell to connect to the kernel.',
  connecting: 'Connecting to the kernel…',
  'not-loaded':
    'The kernel has not loaded jupyter-scratchpad. Run %load_ext jupyter_scratchpad in a cell.',
  incompatible: 'The kernel runs another version of jupyter-scratchpad.',
  unsupported: "This notebook's connection to the kernel does not handle comms.",
  error: 'The kernel did not answer.'
};

function entries(snapshot: ISnapshot, actions: ISidebarActions, elapsed_s: number): HTMLElement {
  const list = el('ul', 'jp-scratchpad-items jp-scratchpad-entries');
  for (const e of snapshot.list!.entries) {
    const node = item(
      'jp-scratchpad-entry',
      e.handle,
      [
        ['tool', e.source_tool ?? 'output'],
        ['size', formatBytes(e.size)],
        ['tokens', `${formatCount(e.tokens)} tokens`],
        ['left', timeLeft(e.ttl_left_s - elapsed_s)]
      ],
      [
        action('Explore', 'explore', `Open the explorer on ${e.handle} in a panel`, () =>
          actions.explore(e.handle)
        ),
        action('Extend', 'extend', 'Expire one hour from now', () =>
          actions.extend({ handle: e.handle })
        ),
        action('Delete', 'delete', 'Delete this spilled output', () =>
          actions.remove({ handle: e.handle })
        )
      ]
    );
    node.dataset.handle = e.handle;
    list.append(node);
  }
  return list;
}

function notes(snapshot: ISnapshot, actions: ISidebarActions, elapsed_s: number): HTMLElement {
  const list = el('ul', 'jp-scratchpad-items jp-scratchpad-notes');
  for (const n of snapshot.list!.notes) {
    const node = item(
      'jp-scratchpad-note',
      n.key,
      [
        ['size', formatBytes(n.size)],
        ['left', timeLeft(n.ttl_left_s - elapsed_s)],
        ['value', n.preview]
      ],
      [
        action('Extend', 'extend', 'Expire one hour from now', () =>
          actions.extend({ key: n.key })
        ),
        action('Delete', 'delete', 'Delete this note', () => actions.remove({ key: n.key }))
      ]
    );
    node.dataset.key = n.key;
    list.append(node);
  }
  return list;
}

/** The sidebar's content for `snapshot` at `now` (ms since the epoch). */
export function renderSidebar(
  snapshot: ISnapshot,
  actions: ISidebarActions,
  now: number
): HTMLElement {
  const root = el('div', 'jp-scratchpad-sidebar-content');
  root.dataset.state = snapshot.state;
  const header = el('div', 'jp-scratchpad-sidebar-header');
  header.append(
    el('span', 'jp-scratchpad-sidebar-notebook', snapshot.notebook ?? 'No notebook'),
    action('Refresh', 'refresh', 'Ask the kernel again', () => actions.refresh())
  );
  root.append(header);

  if (snapshot.state !== 'ready') {
    const message = el(
      'div',
      'jp-scratchpad-sidebar-message',
      snapshot.state === 'unsupported'
        ? `${NOT_READY.unsupported} ${snapshot.detail[0].toUpperCase()}${snapshot.detail.slice(1)}.`
        : NOT_READY[snapshot.state]
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
  if (snapshot.listError) {
    // the list held is out of date: showing it would say "No live spilled outputs" after a spill
    root.append(
      el(
        'div',
        'jp-scratchpad-sidebar-error jp-scratchpad-sidebar-list-error',
        `Could not list the scratchpad: ${snapshot.listError}. Press Refresh to ask again, ` +
          'or run %scratch list in a cell.'
      )
    );
    return root;
  }
  const list = snapshot.list;
  if (!list) {
    return root;
  }
  const elapsed_s = Math.max(0, (now - snapshot.listReceivedAt) / 1000);
  root.append(
    el('div', 'jp-scratchpad-sidebar-section', `Spilled outputs (${list.total_entries})`)
  );
  root.append(
    list.entries.length === 0
      ? el('div', 'jp-scratchpad-sidebar-empty', 'No live spilled outputs.')
      : entries(snapshot, actions, elapsed_s)
  );
  appendNotShown(
    root,
    list.total_entries,
    list.entries.length,
    'older handles',
    '%scratch list --kind handle'
  );
  root.append(el('div', 'jp-scratchpad-sidebar-section', `Notes (${list.total_notes})`));
  root.append(
    list.notes.length === 0
      ? el('div', 'jp-scratchpad-sidebar-empty', 'No notes.')
      : notes(snapshot, actions, elapsed_s)
  );
  appendNotShown(
    root,
    list.total_notes,
    list.notes.length,
    'more notes',
    '%scratch list --kind note'
  );
  return root;
}

/**
 * The kernel lists the newest few hundred: the rest are said, with the command that lists them
 * all (651 spills showed 500 rows under "Spilled outputs (651)", the others out of reach).
 */
function appendNotShown(
  root: HTMLElement,
  total: number,
  shown: number,
  what: string,
  command: string
): void {
  if (total > shown) {
    root.append(
      el(
        'div',
        'jp-scratchpad-sidebar-more',
        `${formatCount(total - shown)} ${what} not shown here: ${command} in a cell lists them all.`
      )
    );
  }
}
