/**
 * The sidebar view and the status text, from snapshots holding real kernel replies.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import { formatBudget, formatBytes, formatCount, formatTimeLeft } from '../src/format';
import { ISnapshot } from '../src/model';
import { Target } from '../src/protocol';
import { ISidebarActions, renderSidebar } from '../src/sidebarView';
import { budgetStatusText } from '../src/status';

const messages = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'messages.json'), 'utf8'));
const RECEIVED_AT = 1_000_000;

function snapshot(change: Partial<ISnapshot> = {}): ISnapshot {
  return {
    notebook: 'analysis.ipynb',
    state: 'ready',
    detail: 'run notebook',
    budget: messages.budget_reply.result,
    list: messages.list_reply.result,
    listReceivedAt: RECEIVED_AT,
    listError: null,
    error: null,
    ...change
  };
}

/** The facts line of an item, by field. */
function facts(node: HTMLElement): Record<string, string> {
  return Object.fromEntries(
    [...node.querySelectorAll<HTMLElement>('.jp-scratchpad-item-fact')].map(f => [
      f.dataset.field!,
      f.textContent ?? ''
    ])
  );
}

function recorder(): ISidebarActions & { calls: string[] } {
  const calls: string[] = [];
  const name = (t: Target) => ('handle' in t ? t.handle : `note:${t.key}`);
  return {
    calls,
    explore: h => void calls.push(`explore ${h}`),
    extend: t => void calls.push(`extend ${name(t)}`),
    remove: t => void calls.push(`delete ${name(t)}`),
    refresh: () => void calls.push('refresh')
  };
}

describe('sidebar', () => {
  it('lists the handle with tool, size, tokens and time left', () => {
    const node = renderSidebar(snapshot(), recorder(), RECEIVED_AT);
    const items = node.querySelectorAll<HTMLElement>('li.jp-scratchpad-entry');
    expect(items).toHaveLength(1);
    const entry = messages.list_reply.result.entries[0];
    expect(items[0].dataset.handle).toBe(entry.handle);
    expect(items[0].querySelector('.jp-scratchpad-item-name')?.textContent).toBe(entry.handle);
    expect(facts(items[0])).toEqual({
      tool: 'k8s_list_pods',
      size: '80.1 KB',
      tokens: `${formatCount(entry.tokens)} tokens`,
      left: '58m left'
    });
    const note = node.querySelector<HTMLElement>('li.jp-scratchpad-note')!;
    expect(note.dataset.key).toBe('plan');
    expect(facts(note).value).toMatch(/count pending pods/);
    expect(node.querySelector('.jp-scratchpad-sidebar-budget')?.textContent).toMatch(
      /^Budget: [\d,]+ \/ 102,400 tokens$/
    );
  });

  it('says how many handles and notes the kernel left out of its list, and how to see them', () => {
    const list = messages.list_reply.result;
    const whole = renderSidebar(snapshot(), recorder(), RECEIVED_AT);
    expect(whole.querySelector('.jp-scratchpad-sidebar-more')).toBeNull();
    const capped = snapshot({
      list: { ...list, total_entries: 651, total_notes: list.notes.length }
    });
    const said = [
      ...renderSidebar(capped, recorder(), RECEIVED_AT).querySelectorAll(
        '.jp-scratchpad-sidebar-more'
      )
    ].map(n => n.textContent);
    expect(said).toEqual([
      `${651 - list.entries.length} older handles not shown here: %scratch list --kind handle in a cell lists them all.`
    ]);
  });

  it('counts time left down from when the list arrived, without asking the kernel', () => {
    const entry = (now: number) =>
      renderSidebar(snapshot(), recorder(), now).querySelector<HTMLElement>(
        'li.jp-scratchpad-entry'
      )!;
    expect(facts(entry(RECEIVED_AT + 30 * 60 * 1000)).left).toBe('28m left');
    expect(facts(entry(RECEIVED_AT + 2 * 3600 * 1000)).left).toBe('expired');
  });

  it('wires explore, extend and delete for entries and notes', () => {
    const a = recorder();
    const node = renderSidebar(snapshot(), a, RECEIVED_AT);
    const h = messages.list_reply.result.entries[0].handle;
    const entry = node.querySelector('li.jp-scratchpad-entry')!;
    const note = node.querySelector('li.jp-scratchpad-note')!;
    for (const action of ['explore', 'extend', 'delete']) {
      entry.querySelector<HTMLButtonElement>(`[data-action="${action}"]`)!.click();
    }
    note.querySelector<HTMLButtonElement>('[data-action="extend"]')!.click();
    note.querySelector<HTMLButtonElement>('[data-action="delete"]')!.click();
    node.querySelector<HTMLButtonElement>('[data-action="refresh"]')!.click();
    expect(a.calls).toEqual([
      `explore ${h}`,
      `extend ${h}`,
      `delete ${h}`,
      'extend note:plan',
      'delete note:plan',
      'refresh'
    ]);
  });

  it('never says a kernel lacks comms when another connection of the page handles them', () => {
    const detail =
      'another notebook or console on this page is connected to the same kernel and handles its ' +
      'comms: use the scratchpad sidebar and explorer from there';
    const node = renderSidebar(
      snapshot({ state: 'unsupported', detail, budget: null, list: null }),
      recorder(),
      0
    );
    expect(node.textContent).not.toMatch(/does not support comms/);
    expect(node.textContent).toMatch(
      /Another notebook or console on this page .* use the scratchpad sidebar/
    );
  });

  it('says clearly when the kernel has not loaded the extension', () => {
    const node = renderSidebar(
      snapshot({ state: 'not-loaded', budget: null, list: null }),
      recorder(),
      0
    );
    expect(node.dataset.state).toBe('not-loaded');
    expect(node.textContent).toMatch(/has not loaded jupyter-scratchpad/);
    expect(node.textContent).toMatch(/%load_ext jupyter_scratchpad/);
    expect(node.querySelector('li')).toBeNull();
  });

  it('says when no spilled output is live (none yet, or all deleted), and shows a request error', () => {
    const empty = { ...messages.list_reply.result, entries: [], notes: [], total_entries: 0 };
    const node = renderSidebar(snapshot({ list: empty, error: 'timed out' }), recorder(), 0);
    expect(node.textContent).toMatch(/No live spilled outputs\./);
    expect(node.querySelector('.jp-scratchpad-sidebar-error')?.textContent).toBe('timed out');
  });
});

describe('status bar text', () => {
  it('shows used / usable tokens when the kernel is ready', () => {
    const b = messages.budget_reply.result;
    const { text, title } = budgetStatusText(snapshot());
    expect(text).toBe(`Scratchpad: ${formatCount(b.used)} / 102,400 tokens`);
    expect(title).toMatch(/gpt-4o/);
    expect(title).toMatch(/window 128,000, margin 20%/);
  });

  it('is empty when the kernel is not loaded', () => {
    expect(budgetStatusText(snapshot({ state: 'not-loaded' })).text).toBe('');
    expect(budgetStatusText(snapshot({ budget: null })).text).toBe('');
  });
});

describe('formatting', () => {
  it('sizes, counts, time left, budget', () => {
    expect([
      formatBytes(0),
      formatBytes(1023),
      formatBytes(1536),
      formatBytes(5 * 2 ** 30),
      formatBytes(3 * 2 ** 40)
    ]).toEqual(['0 bytes', '1,023 bytes', '1.5 KB', '5.0 GB', '3,072.0 GB']);
    expect([formatCount(1234567), formatCount(null), formatCount(NaN)]).toEqual([
      '1,234,567',
      '?',
      '?'
    ]);
    expect([0, -1, 5.7, 61, 3599, 3600, 3660, 90000].map(formatTimeLeft)).toEqual([
      'expired',
      'expired',
      '5s',
      '1m',
      '59m',
      '1h 00m',
      '1h 01m',
      '1d 1h'
    ]);
    expect(formatBudget(1500, 102400)).toBe('1,500 / 102,400 tokens');
  });
});
