/**
 * What a saved explorer output shows when its kernel does not have the explorer (a pure function).
 */

import { el } from './dom';
import { IExplorerSummary } from './protocol';

/** The summary of an explorer, as text nodes (what shows when its kernel does not have it). */
export function renderExplorerSummary(summary: IExplorerSummary, why: string): HTMLElement {
  const box = el('div', 'jp-scratchpad-explorer-summary');
  box.append(el('div', 'jp-scratchpad-explorer-summary-title', summary.title));
  const list = el('ul', 'jp-scratchpad-explorer-summary-lines');
  for (const line of summary.lines) {
    list.append(el('li', '', line));
  }
  box.append(list, el('div', 'jp-scratchpad-explorer-summary-why', `${why} ${summary.again}`));
  return box;
}
