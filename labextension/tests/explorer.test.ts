/**
 * The explorer's page (the anywidget ES module the kernel ships) against a fake model, and the
 * summary a saved explorer output shows without its kernel.
 */
import { describe, expect, it } from 'vitest';

// @ts-expect-error: a plain ES module without types, loaded as the browser loads it
import { renderView } from '../../jupyter_scratchpad/widgets/explorer.js';
import { loadHead } from '../src/explorer';
import { renderExplorerSummary } from '../src/explorerSummary';
import { parseExplorerSummary } from '../src/protocol';
import { button, ENTRY, mount, tick } from './fakeExplorerModel';

function click(root: HTMLElement, panel: string, label: string): void {
  button(root, panel, label).click();
}

describe('the explorer page', () => {
  it('lists the entries and starts SQL on the selected relation', () => {
    const { root, cleanup } = mount();
    expect(root.classList.contains('jp-scratchpad-explorer')).toBe(true);
    expect(root.querySelector('.jp-scratchpad-x-picker')?.textContent).toContain(ENTRY.handle);
    expect(root.querySelector<HTMLTextAreaElement>('textarea')?.value).toBe(
      `SELECT * FROM "${ENTRY.handle}"`
    );
    expect(root.querySelector('.jp-scratchpad-x-meter-text')?.textContent).toContain(
      'used 10 / 100'
    );
    cleanup();
  });

  it('greps with a person’s defaults and offers More', async () => {
    const { model, root, cleanup } = mount();
    const pattern = root.querySelector<HTMLInputElement>('[data-tab="grep"] input')!;
    pattern.value = 'Failed';
    click(root, 'grep', 'Search');
    expect(model.sent.at(-1)).toMatchObject({
      action: 'grep',
      args: { pattern: 'Failed', context: 1, max_matches: 20, ignore_case: false }
    });
    model.reply({
      ok: true,
      view: {
        kind: 'windows',
        windows: [{ first: 4, lines: ['a', 'Failed', 'b'] }],
        marked: [5],
        more: true,
        summary: '1 of 30'
      }
    });
    await tick();
    expect(root.querySelector('[data-tab="grep"] mark')?.textContent).toContain('Failed');
    const more = [...root.querySelectorAll<HTMLButtonElement>('button')].find(
      b => b.textContent === 'More'
    )!;
    expect(more.hidden).toBe(false);
    more.click();
    expect(model.sent.at(-1)).toMatchObject({ action: 'grep', args: { max_matches: 40 } });
    cleanup();
  });

  it('shows where each grep match is, and a path opens its value', async () => {
    const { model, root, cleanup } = mount();
    const pattern = root.querySelector<HTMLInputElement>('[data-tab="grep"] input')!;
    pattern.value = 'Failed';
    click(root, 'grep', 'Search');
    model.reply({
      ok: true,
      view: {
        kind: 'windows',
        windows: [{ first: 4, lines: ['{', '"phase": "Failed"', '}'] }],
        marked: [5],
        paths: { '5': '$.items[3].status.phase' },
        summary: '1 of 1'
      }
    });
    await tick();
    const lines = root.querySelector('[data-tab="grep"] pre')!;
    expect(lines.textContent).toContain('>     5  "phase": "Failed"  $.items[3].status.phase\n');
    const link = lines.querySelector<HTMLAnchorElement>('a.jp-scratchpad-x-path')!;
    expect(link.textContent).toBe('$.items[3].status.phase');
    link.click();
    expect(model.sent.at(-1)).toMatchObject({
      action: 'get_in',
      args: { path: '$.items[3].status.phase' }
    });
    const schemaPanel = root.querySelector<HTMLElement>(
      '.jp-scratchpad-x-panel[data-tab="schema"]'
    )!;
    expect(schemaPanel.hidden).toBe(false);
    expect(schemaPanel.querySelector<HTMLInputElement>('input[list]')!.value).toBe(
      '$.items[3].status.phase'
    );
    cleanup();
  });

  it('draws a grep page without paths (a text entry) as plain lines', () => {
    const box = renderView({
      kind: 'windows',
      windows: [{ first: 1, lines: ['ok', 'ERROR x'] }],
      marked: [2],
      summary: '1 of 1'
    }) as HTMLElement;
    expect(box.querySelector('a')).toBeNull();
    expect(box.querySelector('pre')!.textContent).toBe('      1  ok\n>     2  ERROR x\n');
  });

  it('clears a stale SQL table when the next query fails, and shows suggestions', async () => {
    const { model, root, cleanup } = mount();
    click(root, 'sql', 'Run');
    model.reply({
      ok: true,
      view: { kind: 'table', columns: ['n'], rows: [['42']], summary: 'rows 1-1 of 1' }
    });
    await tick();
    expect(root.querySelector('[data-tab="sql"] td')?.textContent).toBe('42');
    root.querySelector<HTMLTextAreaElement>('textarea')!.value = 'SELECT * FROM nowhere';
    click(root, 'sql', 'Run');
    model.reply({
      ok: false,
      error: {
        error: 'sql_error',
        message: 'Table nowhere does not exist',
        suggestions: [
          {
            tool: 'sql',
            arguments: { query: 'DESCRIBE h' },
            why: 'columns',
            call: 'sql(query="DESCRIBE h")'
          }
        ]
      }
    });
    await tick();
    expect(root.querySelector('[data-tab="sql"] td')).toBeNull();
    expect(root.querySelector('.jp-scratchpad-x-error')?.textContent).toContain('nowhere');
    const suggestion = root.querySelector<HTMLButtonElement>('[data-suggestion]')!;
    suggestion.click();
    expect(root.querySelector<HTMLTextAreaElement>('textarea')!.value).toBe('DESCRIBE h');
    cleanup();
  });

  it('switches to reading as the model', () => {
    const { model, root, cleanup } = mount();
    const box = root.querySelector<HTMLInputElement>('[data-role="as-agent"]')!;
    box.checked = true;
    box.dispatchEvent(new Event('change'));
    expect(model.state.as_agent).toBe(true);
    cleanup();
    expect(model.handlers.get('msg:custom')).toEqual([]);
  });

  it('puts kernel text in as text, never markup', () => {
    const view = renderView({
      kind: 'lines',
      first: 1,
      lines: ['<img src=x onerror=alert(1)>'],
      marked: []
    });
    expect(view.querySelector('img')).toBeNull();
    expect(view.textContent).toContain('<img src=x onerror=alert(1)>');
  });
});

describe('paging', () => {
  // Next asked for offset + page size: the rows that did not fit a reply were never shown
  it('SQL Next goes on after the last row shown, and stops at the end', async () => {
    const { model, root, cleanup } = mount();
    expect(button(root, 'sql', 'Next').disabled).toBe(true);
    root.querySelector<HTMLInputElement>('[data-tab="sql"] input')!.value = '500';
    click(root, 'sql', 'Run');
    model.reply({
      ok: true,
      view: {
        kind: 'table',
        columns: ['i'],
        rows: [['0']],
        summary: 'rows 1-274 of 600',
        offset: 0,
        total: 600,
        next_offset: 274
      }
    });
    await tick();
    expect(button(root, 'sql', 'Prev').disabled).toBe(true);
    click(root, 'sql', 'Next');
    expect(model.sent.at(-1)).toMatchObject({
      action: 'sql',
      args: { offset: 274, page_size: 500 }
    });
    model.reply({
      ok: true,
      view: {
        kind: 'table',
        columns: ['i'],
        rows: [['274']],
        summary: 'rows 275-600 of 600',
        offset: 274,
        total: 600,
        next_offset: null
      }
    });
    await tick();
    expect(button(root, 'sql', 'Next').disabled).toBe(true);
    expect(button(root, 'sql', 'Prev').disabled).toBe(false);
    click(root, 'sql', 'Prev');
    expect(model.sent.at(-1)).toMatchObject({ action: 'sql', args: { offset: 0 } });
    cleanup();
  });

  it('SQL that cannot be paged disables Prev and Next and says why', async () => {
    const { model, root, cleanup } = mount();
    click(root, 'sql', 'Run');
    model.reply({
      ok: true,
      view: {
        kind: 'text',
        text: 'x',
        summary: 'as the model sees it · not paged',
        offset: 0,
        total: null,
        next_offset: null
      }
    });
    await tick();
    expect(button(root, 'sql', 'Next').disabled).toBe(true);
    expect(button(root, 'sql', 'Prev').disabled).toBe(true);
    expect(button(root, 'sql', 'Next').title).toContain('cannot be paged');
    cleanup();
  });

  it('Iterate Next goes on after the last row shown', async () => {
    const { model, root, cleanup } = mount();
    click(root, 'iterate', 'Show');
    expect(model.sent.at(-1)).toMatchObject({ action: 'iterate', args: { offset: 0, limit: 20 } });
    model.reply({
      ok: true,
      view: {
        kind: 'table',
        columns: ['_index'],
        rows: [['0']],
        summary: 'items 0-6',
        offset: 0,
        count: 7,
        total: 600,
        next_offset: 7
      }
    });
    await tick();
    click(root, 'iterate', 'Next');
    expect(model.sent.at(-1)).toMatchObject({ action: 'iterate', args: { offset: 7, limit: 20 } });
    model.reply({
      ok: true,
      view: {
        kind: 'table',
        columns: ['_index'],
        rows: [['7']],
        summary: 'items 7-599',
        offset: 7,
        count: 593,
        total: 600,
        next_offset: null
      }
    });
    await tick();
    expect(button(root, 'iterate', 'Next').disabled).toBe(true);
    cleanup();
  });
});

describe('a saved explorer without its kernel', () => {
  it('shows the summary it carries', () => {
    const summary = parseExplorerSummary({
      model_id: 'abc',
      handle: 'h_1',
      title: 'Scratchpad explorer — run notebook',
      lines: ['exploring: h_1', 'budget: used 1 / 2'],
      again: '(run the notebook and `%scratch explore h_1`)'
    });
    if (typeof summary === 'string') {
      throw new Error(summary);
    }
    const node = renderExplorerSummary(summary, 'No kernel: a saved summary.');
    expect(node.textContent).toContain('Scratchpad explorer — run notebook');
    expect(node.textContent).toContain('No kernel: a saved summary.');
    expect(node.querySelectorAll('li')).toHaveLength(2);
    expect(parseExplorerSummary({ title: 'x' })).toMatch(/model id/);
  });
});

describe('an explorer opened from a card', () => {
  it('shows the head of its handle without a click', async () => {
    const { model, root, cleanup } = mount();
    expect(await loadHead(root, ENTRY.handle, 1000)).toBe(true);
    expect(model.sent.at(-1)).toMatchObject({
      action: 'preview',
      args: { tool: 'head', lines: 50 }
    });
    model.reply({
      ok: true,
      view: { kind: 'lines', start: 1, end: 2, total: 8000, lines: ['{', '  "kind": "PodList",'] }
    });
    await tick();
    expect(
      root.querySelector('[data-tab="preview"] .jp-scratchpad-x-result')?.textContent
    ).toContain('"kind": "PodList"');
    cleanup();
  });

  it('waits for the page to draw and select the handle, and leaves a shown preview alone', async () => {
    const root = document.createElement('div');
    document.body.append(root);
    const opening = loadHead(root, 'other_handle', 1000);
    // the widget view draws after the panel opened, on the kernel's selection of another handle
    const { model, root: page, cleanup } = mount();
    root.append(page);
    await tick();
    expect(model.sent).toEqual([]);
    // the kernel moves the selection to the handle explored: its head is loaded
    const other = { ...ENTRY, handle: 'other_handle' };
    model.state.entries = [ENTRY, other];
    model.state.handle = other.handle;
    for (const fn of model.handlers.get('change:handle') ?? []) {
      fn();
    }
    expect(await opening).toBe(true);
    expect(model.sent.at(-1)).toMatchObject({ action: 'preview', args: { tool: 'head' } });
    model.reply({ ok: true, view: { kind: 'lines', start: 1, end: 1, total: 1, lines: ['x'] } });
    await tick();
    // opened again on the same handle: what is shown stays, no second request
    expect(await loadHead(root, other.handle, 50)).toBe(false);
    expect(model.sent).toHaveLength(1);
    cleanup();
  });
});
