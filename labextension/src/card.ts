/**
 * The stub card: the MIME renderer for `application/vnd.jupyter.scratchpad.stub+json`.
 *
 * The DOM is built with text nodes only (never innerHTML), so a preview full of markup is
 * shown as it is and the renderer can be marked safe for untrusted notebooks.
 */

import type { IRenderMime } from '@jupyterlab/rendermime-interfaces';
import { Widget } from '@lumino/widgets';

import { el } from './dom';
import { formatBytes, formatCount } from './format';
import { IStub, parseStub, STUB_MIME_TYPE } from './protocol';

/** What the card's buttons do; `node` is the card, so the action can find its cell. */
export interface ICardActions {
  explore(handle: string, node: HTMLElement): void | Promise<void>;
  schema(handle: string, node: HTMLElement): void | Promise<void>;
  copyHandle(handle: string, node: HTMLElement): void | Promise<void>;
}

export const CARD_CLASS = 'jp-scratchpad-card';

function fact(label: string, value: string): HTMLElement {
  const node = el('span', 'jp-scratchpad-card-fact');
  node.append(
    el('span', 'jp-scratchpad-card-label', label),
    el('span', 'jp-scratchpad-card-value', value)
  );
  node.dataset.fact = label;
  return node;
}

function button(
  label: string,
  action: string,
  title: string,
  onClick: () => void
): HTMLButtonElement {
  const node = el('button', `jp-scratchpad-card-action jp-mod-styled jp-mod-reject`, label);
  node.type = 'button';
  node.title = title;
  node.dataset.action = action;
  node.addEventListener('click', event => {
    event.preventDefault();
    onClick();
  });
  return node;
}

function tokensText(tokens: number, lowerBound: boolean, estimate: boolean): string {
  return `${lowerBound ? '≥ ' : ''}${formatCount(tokens)}${estimate ? ' (estimate)' : ''}`;
}

/**
 * The exact token count of `handle` landed (a kernel event): every card of it under `root`
 * shows the exact number instead of the lower bound it was rendered with. Returns how many
 * cards changed.
 */
export function applyTokens(root: ParentNode, handle: string, tokens: number): number {
  let changed = 0;
  for (const card of root.querySelectorAll<HTMLElement>(`.${CARD_CLASS}`)) {
    if (card.dataset.handle !== handle) {
      continue;
    }
    const value = card.querySelector<HTMLElement>('[data-fact="tokens"] .jp-scratchpad-card-value');
    if (!value) {
      continue;
    }
    const suffix = card.dataset.tokensModel ? ` (${card.dataset.tokensModel})` : '';
    value.textContent = tokensText(tokens, false, card.dataset.tokensEstimate === 'true') + suffix;
    changed += 1;
  }
  return changed;
}

/** The card for one stub, with its actions wired to `actions`. */
export function renderStubCard(stub: IStub, actions: ICardActions): HTMLElement {
  const card = el('div', CARD_CLASS);
  card.dataset.handle = stub.handle;
  card.dataset.tokensEstimate = String(stub.tokens_estimate === true);
  if (stub.tokens_model) {
    card.dataset.tokensModel = stub.tokens_model;
  }

  const header = el('div', 'jp-scratchpad-card-header');
  header.append(
    el('span', 'jp-scratchpad-card-title', 'Spilled to the scratchpad'),
    el('code', 'jp-scratchpad-card-handle', stub.handle)
  );
  const tokens = tokensText(
    stub.tokens,
    stub.tokens_exact === false,
    stub.tokens_estimate === true
  );
  const facts = el('div', 'jp-scratchpad-card-facts');
  facts.append(
    fact('tool', stub.source_tool ?? 'output'),
    fact('format', stub.format),
    fact('size', formatBytes(stub.size)),
    fact('lines', formatCount(stub.lines)),
    fact('tokens', stub.tokens_model ? `${tokens} (${stub.tokens_model})` : tokens)
  );

  const preview = el('pre', 'jp-scratchpad-card-preview', stub.preview);
  const note = el('div', 'jp-scratchpad-card-note', stub.note);
  card.append(header, facts, note, preview);

  if (stub.schema && stub.schema.length > 0) {
    const schema = el('ul', 'jp-scratchpad-card-schema');
    for (const line of stub.schema) {
      schema.append(el('li', '', line));
    }
    card.append(el('div', 'jp-scratchpad-card-section', 'Schema sketch'), schema);
  }

  const bar = el('div', 'jp-scratchpad-card-actions');
  bar.append(
    button(
      'Explore',
      'explore',
      `Open the explorer on ${stub.handle} in a panel beside the notebook`,
      () => {
        void actions.explore(stub.handle, card);
      }
    ),
    button(
      'Schema',
      'schema',
      `Run %scratch schema ${stub.handle}: in a new cell below (in a console, there)`,
      () => {
        void actions.schema(stub.handle, card);
      }
    ),
    button('Copy handle', 'copy', 'Copy the handle to the clipboard', () => {
      void actions.copyHandle(stub.handle, card);
    })
  );
  card.append(bar);
  if (typeof stub.where === 'string' && stub.where) {
    // the text/plain part ends with it too: why the output is held here (a stream's lines above)
    card.append(el('div', 'jp-scratchpad-card-where', stub.where));
  }
  return card;
}

/** What is shown for a payload that is not a stub (an older or broken kernel). */
export function renderInvalidStub(reason: string): HTMLElement {
  return el('div', `${CARD_CLASS} jp-scratchpad-card-invalid`, `Not a scratchpad stub: ${reason}.`);
}

/** A renderer widget: one card per output. */
export class StubRenderer extends Widget implements IRenderMime.IRenderer {
  constructor(private readonly actions: ICardActions) {
    super();
    this.addClass('jp-scratchpad-card-output');
  }

  renderModel(model: IRenderMime.IMimeModel): Promise<void> {
    const stub = parseStub(model.data[STUB_MIME_TYPE]);
    this.node.replaceChildren(
      typeof stub === 'string' ? renderInvalidStub(stub) : renderStubCard(stub, this.actions)
    );
    return Promise.resolve();
  }
}

/** The factory to add to a rendermime registry (ranked before text/html). */
export function createStubRendererFactory(actions: ICardActions): IRenderMime.IRendererFactory {
  return {
    safe: true,
    mimeTypes: [STUB_MIME_TYPE],
    defaultRank: 10,
    createRenderer: () => new StubRenderer(actions)
  };
}
