/**
 * The stub card, rendered from a stub the real kernel made (tests/fixtures/messages.json).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';

import { applyTokens, createStubRendererFactory, ICardActions, renderStubCard } from '../src/card';
import { IStub, parseEvent, parseStub, STUB_MIME_TYPE } from '../src/protocol';

const messages = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'messages.json'), 'utf8'));
const stub: IStub = messages.stub;

function actions(): ICardActions & { calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    explore: vi.fn((h: string) => void calls.push(`explore ${h}`)),
    schema: vi.fn((h: string) => void calls.push(`schema ${h}`)),
    copyHandle: vi.fn((h: string) => void calls.push(`copy ${h}`))
  };
}

function text(node: Element, selector: string): string {
  return node.querySelector(selector)?.textContent ?? '';
}

describe('stub card', () => {
  it('shows handle, tool, size, tokens, format, preview, note and schema', () => {
    const card = renderStubCard(stub, actions());
    expect(card.dataset.handle).toBe(stub.handle);
    expect(text(card, '.jp-scratchpad-card-handle')).toBe(stub.handle);
    const facts = Object.fromEntries(
      [...card.querySelectorAll<HTMLElement>('.jp-scratchpad-card-fact')].map(f => [
        f.dataset.fact,
        f.querySelector('.jp-scratchpad-card-value')?.textContent
      ])
    );
    expect(facts).toEqual({
      tool: 'k8s_list_pods',
      format: 'json',
      size: '80.1 KB',
      lines: '8,005',
      // a spill over 64 KiB: the decision's lower bound until the exact count lands
      tokens: '≥ 5,120 (gpt-4o)'
    });
    expect(text(card, '.jp-scratchpad-card-preview')).toBe(stub.preview);
    expect(text(card, '.jp-scratchpad-card-note')).toMatch(/lines 1-14 and 8,000-8,005 of 8,005/);
    const schema = [...card.querySelectorAll('.jp-scratchpad-card-schema li')].map(
      li => li.textContent
    );
    expect(schema).toEqual(stub.schema);
  });

  it('runs its actions with the handle and the card node', () => {
    const a = actions();
    const card = renderStubCard(stub, a);
    for (const name of ['explore', 'schema', 'copy']) {
      card.querySelector<HTMLButtonElement>(`[data-action="${name}"]`)!.click();
    }
    expect(a.calls).toEqual([
      `explore ${stub.handle}`,
      `schema ${stub.handle}`,
      `copy ${stub.handle}`
    ]);
    expect(a.explore).toHaveBeenCalledWith(stub.handle, card);
  });

  it('shows markup in a preview as text, never as elements', () => {
    const hostile = { ...stub, preview: '<img src=x onerror="alert(1)"><b>bold</b>' };
    const card = renderStubCard(hostile, actions());
    expect(card.querySelector('img, b')).toBeNull();
    expect(text(card, '.jp-scratchpad-card-preview')).toBe(hostile.preview);
  });

  it('has no schema section for a text stub and marks estimated tokens', () => {
    const plain = {
      ...stub,
      format: 'text' as const,
      schema: undefined,
      tokens: 26411,
      tokens_exact: true,
      tokens_estimate: true
    };
    const card = renderStubCard(plain, actions());
    expect(card.querySelector('.jp-scratchpad-card-schema')).toBeNull();
    expect(card.textContent).toMatch(/26,411 \(estimate\)/);
  });
});

describe('renderer factory', () => {
  it('is safe, claims the stub MIME type and ranks before text/html', () => {
    const factory = createStubRendererFactory(actions());
    expect(factory.safe).toBe(true);
    expect(factory.mimeTypes).toEqual([STUB_MIME_TYPE]);
    expect(factory.defaultRank).toBeLessThan(50);
  });

  it('renders a model into a card, and a bad payload into a clear message', async () => {
    const factory = createStubRendererFactory(actions());
    const renderer = factory.createRenderer({} as never);
    const model = (data: unknown) =>
      ({ data: { [STUB_MIME_TYPE]: data }, metadata: {}, trusted: false }) as never;
    await renderer.renderModel(model(stub));
    expect(renderer.node.querySelector('.jp-scratchpad-card')).not.toBeNull();
    await renderer.renderModel(model({ handle: 'x' }));
    expect(renderer.node.textContent).toMatch(/^Not a scratchpad stub: size is not a number/);
    expect(renderer.node.querySelectorAll('.jp-scratchpad-card')).toHaveLength(1);
  });
});

describe('a landed token count', () => {
  it('replaces the lower bound on every card of that handle, and only there', () => {
    const pending: IStub = { ...stub, tokens: 5120, tokens_exact: false };
    const other: IStub = {
      ...stub,
      handle: 'other_000000000000',
      tokens: 5120,
      tokens_exact: false
    };
    const root = document.createElement('div');
    root.append(
      renderStubCard(pending, actions()),
      renderStubCard(pending, actions()),
      renderStubCard(other, actions())
    );
    const values = () =>
      [...root.querySelectorAll('[data-fact="tokens"] .jp-scratchpad-card-value')].map(
        v => v.textContent
      );
    expect(values()[0]).toMatch(/^≥ 5,120/);
    const event = messages.tokens_event;
    expect(parseEvent(event)).not.toBeNull();
    expect(applyTokens(root, pending.handle, event.tokens)).toBe(2);
    const exact = values();
    expect(exact[0]).not.toMatch(/≥/);
    expect(exact[0]).toContain(event.tokens.toLocaleString('en-US'));
    expect(exact[1]).toBe(exact[0]);
    expect(exact[2]).toMatch(/^≥ 5,120/);
  });

  it('is told apart from replies and refused when malformed', () => {
    expect(parseEvent(messages.budget_reply)).toBeNull();
    expect(parseEvent({ ...messages.tokens_event, handle: 'Bad Handle' })).toBeNull();
    expect(parseEvent({ ...messages.tokens_event, tokens: -1 })).toBeNull();
    expect(parseEvent({ ...messages.tokens_event, protocol: '9.0' })).toBeNull();
  });
});

describe('a stub held after the lines of a stream', () => {
  // the kernel's bundle of a held stream (tests/fixtures/token_updates.json, from stub_bundle)
  const updates = JSON.parse(
    readFileSync(join(__dirname, 'fixtures', 'token_updates.json'), 'utf8')
  ) as { name: string; after: Record<string, unknown> }[];
  const held = updates.find(c => c.name === 'where note')!.after;

  it('says why it is held here, as the text/plain part does', () => {
    const parsed = parseStub(held[STUB_MIME_TYPE]);
    expect(typeof parsed).not.toBe('string');
    const card = renderStubCard(parsed as IStub, actions());
    const where = card.querySelector('.jp-scratchpad-card-where')?.textContent ?? '';
    expect(where).toBe('(held after the 256 lines of it shown above)');
    expect((held['text/plain'] as string).endsWith(`\n${where}`)).toBe(true);
  });

  it('shows no such line for a stub held where it was', () => {
    expect(renderStubCard(stub, actions()).querySelector('.jp-scratchpad-card-where')).toBeNull();
  });
});
