// @ts-expect-error: a plain ES module without types, loaded as the browser loads it
import explorer from '../../jupyter_scratchpad/widgets/explorer.js';

/**
 * A model as anywidget hands it to the explorer's `render`: traitlets by name, custom messages
 * both ways, and a send that throws once `closed`, as a disposed comm's does. Shared by the
 * explorer's tests.
 */

type Handler = (...args: unknown[]) => void;

export class FakeModel {
  sent: Record<string, unknown>[] = [];
  handlers = new Map<string, Handler[]>();
  closed = false;
  constructor(public state: Record<string, unknown>) {}
  get(name: string): unknown {
    return this.state[name];
  }
  set(name: string, value: unknown): void {
    this.state[name] = value;
  }
  save_changes(): void {}
  on(event: string, fn: Handler): void {
    this.handlers.set(event, [...(this.handlers.get(event) ?? []), fn]);
  }
  off(event: string, fn: Handler): void {
    this.handlers.set(
      event,
      (this.handlers.get(event) ?? []).filter(f => f !== fn)
    );
  }
  trigger(event: string): void {
    for (const fn of this.handlers.get(event) ?? []) {
      fn();
    }
  }
  send(content: Record<string, unknown>): void {
    if (this.closed) {
      throw new Error('Cannot send'); // what @jupyterlab/services' Comm.send throws once disposed
    }
    this.sent.push(content);
  }
  reply(content: Record<string, unknown>): void {
    const last = this.sent[this.sent.length - 1];
    for (const fn of this.handlers.get('msg:custom') ?? []) {
      fn({ type: 'reply', id: last.id, ...content });
    }
  }
}

export const ENTRY = {
  handle: 'pods_0123456789ab',
  source_tool: 'k8s_list_pods',
  format: 'json',
  size: 80_000,
  lines: 8000,
  tokens: 26_000,
  created_at: 0,
  expires_at: 3600
};

/** The explorer rendered on a fresh fake model, in the document. */
export function mount(): { model: FakeModel; root: HTMLElement; cleanup: () => void } {
  const model = new FakeModel({
    entries: [ENTRY],
    handle: ENTRY.handle,
    relations: [{ name: ENTRY.handle }, { name: 'scratch_notes' }],
    budget: { used: 10, usable: 100, remaining: 90, per_call_limit: 50, model: 'gpt-4o' },
    as_agent: false,
    title: 'run r · agent a · model gpt-4o',
    defaults: { grep_context: 1, grep_max: 20, preview_lines: 50, sql_page: 20, iterate_rows: 20 }
  });
  const root = document.createElement('div');
  document.body.append(root);
  const cleanup = explorer.render({ model, el: root });
  return { model, root, cleanup };
}

export function button(root: HTMLElement, panel: string, label: string): HTMLButtonElement {
  const found = [...root.querySelectorAll<HTMLButtonElement>(`[data-tab="${panel}"] button`)].find(
    b => b.textContent === label
  );
  if (!found) {
    throw new Error(`no button ${label} in ${panel}`);
  }
  return found;
}

export const tick = () => new Promise(resolve => setTimeout(resolve, 0));
