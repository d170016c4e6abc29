/**
 * The explorer's page (the anywidget module the kernel ships) when its kernel goes away, and an
 * explorer panel opened again from another card. The model is fakeExplorerModel's,
 * whose send throws once closed, as a disposed comm's does.
 */
import { describe, expect, it } from 'vitest';

import { showHeadAgain } from '../src/explorer';
import { button, ENTRY, mount, tick } from './fakeExplorerModel';

const GONE =
  'The kernel restarted (or stopped): this explorer is no longer live. Run %scratch explore again.';

describe('an explorer whose kernel went away', () => {
  it('says so when a click cannot be sent (a shutdown), instead of hanging on "…"', async () => {
    const { model, root, cleanup } = mount();
    model.closed = true;
    const errors: unknown[] = [];
    const onError = (e: PromiseRejectionEvent) => errors.push(e.reason);
    window.addEventListener('unhandledrejection', onError);
    button(root, 'preview', 'Head').click();
    await tick();
    await tick();
    window.removeEventListener('unhandledrejection', onError);
    expect(errors).toEqual([]);
    const result = root.querySelector('[data-tab="preview"] .jp-scratchpad-x-result');
    expect(result?.textContent).not.toContain('…');
    expect(root.querySelector('.jp-scratchpad-x-notice')?.textContent).toBe(GONE);
    expect(root.dataset.state).toBe('gone');
    expect(button(root, 'preview', 'Head').disabled).toBe(true);
    expect(root.querySelector<HTMLSelectElement>('.jp-scratchpad-x-picker')?.disabled).toBe(true);
    cleanup();
  });

  it('says so as soon as a restart disconnects the model, and settles a request in flight', async () => {
    const { model, root, cleanup } = mount();
    button(root, 'preview', 'Tail').click();
    expect(model.sent).toHaveLength(1);
    const result = root.querySelector('[data-tab="preview"] .jp-scratchpad-x-result');
    expect(result?.textContent).toBe('…');
    model.trigger('comm_live_update'); // the widget manager's disconnect on "restarting"
    await tick();
    expect(result?.textContent).toBe('');
    expect(root.querySelector('.jp-scratchpad-x-notice')?.textContent).toBe(GONE);
    expect(button(root, 'preview', 'Head').disabled).toBe(true);
    cleanup();
  });
});

describe('an explorer panel explored again from another card', () => {
  it('goes back to Preview, drops the last error and shows the head', async () => {
    const { model, root, cleanup } = mount();
    root.querySelector<HTMLButtonElement>('.jp-scratchpad-x-tab[data-tab="sql"]')!.click();
    button(root, 'sql', 'Run').click();
    model.reply({
      ok: false,
      error: { error: 'sql_error', message: 'Catalog Error: Table x does not exist!' }
    });
    await tick();
    expect(root.querySelector('.jp-scratchpad-x-notice')?.textContent).toContain('sql_error');
    const shown = model.sent.length;

    expect(await showHeadAgain(root, ENTRY.handle, 1000)).toBe(true);
    expect(root.querySelector('.jp-scratchpad-x-notice')?.textContent).toBe('');
    const preview = root.querySelector<HTMLElement>('.jp-scratchpad-x-panel[data-tab="preview"]')!;
    expect(preview.hidden).toBe(false);
    expect(root.querySelector<HTMLElement>('.jp-scratchpad-x-panel[data-tab="sql"]')!.hidden).toBe(
      true
    );
    expect(model.sent).toHaveLength(shown + 1);
    expect(model.sent.at(-1)).toMatchObject({ action: 'preview', args: { tool: 'head' } });
    cleanup();
  });
});

describe('reads as the model', () => {
  it('tell the page a charge was made, so the status bar can follow', async () => {
    const { model, root, cleanup } = mount();
    const charged: unknown[] = [];
    const listen = (e: Event) => charged.push((e as CustomEvent).detail);
    document.addEventListener('jp-scratchpad-charged', listen);
    button(root, 'preview', 'Head').click();
    model.reply({ ok: true, view: { kind: 'lines', start: 1, end: 1, total: 2, lines: ['x'] } });
    await tick();
    expect(charged).toEqual([]); // read as the person: nothing charged
    model.state.as_agent = true;
    button(root, 'preview', 'Head').click();
    model.reply({ ok: true, view: { kind: 'text', text: 'x', start: 1, end: 1, total: 2 } });
    await tick();
    expect(charged).toEqual([{ action: 'preview' }]);
    document.removeEventListener('jp-scratchpad-charged', listen);
    cleanup();
  });
});

describe('Preview paging', () => {
  it('disables Next on the last page (after Tail), and enables it again on another page', async () => {
    const { model, root, cleanup } = mount();
    const next = button(root, 'preview', 'Next');
    button(root, 'preview', 'Tail').click();
    model.reply({
      ok: true,
      view: { kind: 'lines', start: 7951, end: 8000, total: 8000, lines: ['}'] }
    });
    await tick();
    expect(next.disabled).toBe(true);
    expect(next.title).toBe('the last page: no lines after it');
    button(root, 'preview', 'Head').click();
    model.reply({
      ok: true,
      view: { kind: 'lines', start: 1, end: 50, total: 8000, lines: ['{'] }
    });
    await tick();
    expect(next.disabled).toBe(false);
    next.click();
    expect(model.sent.at(-1)).toMatchObject({
      action: 'preview',
      args: { tool: 'slice', start: 51 }
    });
    cleanup();
  });
});
