/**
 * The exact token count of a large spill lands after its stub was displayed (a kernel event):
 * the stub outputs in the notebook's models are rewritten, so the card re-renders and the
 * saved notebook holds the exact count, not "≥ 5,120 … (still counting …)" forever.
 *
 * The wording mirrors `_headline` in `jupyter_scratchpad/ipython/_render.py`; the fixture
 * `tests/fixtures/token_updates.json`, written by `tests/comm/test_token_updates.py` from
 * `stub_bundle`, keeps the two equal.
 */

import { STUB_MIME_TYPE } from './protocol';

type Bundle = Record<string, unknown>;

/** The part of a cell's `IOutputAreaModel` used here (`@jupyterlab/outputarea`). */
export interface IOutputList {
  readonly length: number;
  get(index: number): { type: string; data: object; toJSON(): object };
  set(index: number, value: never): void;
}

function count(n: unknown): string {
  return (typeof n === 'number' && isFinite(n) ? Math.round(n) : 0).toLocaleString('en-US');
}

/** The tokens part of a stub's headline, as the kernel writes it (`_headline`). */
export function tokensPhrase(stub: Bundle): string {
  const est = stub.tokens_estimate ? ' (estimate)' : '';
  const model = stub.tokens_model ? ` for ${String(stub.tokens_model)}` : '';
  const tokens = `${count(stub.tokens)} tokens${est}${model}`;
  if (stub.tokens_exact === false) {
    return `≥ ${tokens} (still counting; %scratch show ${String(stub.handle)} has the exact count)`;
  }
  return tokens;
}

/** Python's `html.escape` (quotes included). */
function escapeHtml(text: string): string {
  return text
    .replace(/&/g, '&amp;')
    .replace(/</g, '&lt;')
    .replace(/>/g, '&gt;')
    .replace(/"/g, '&quot;')
    .replace(/'/g, '&#x27;');
}

/** A MIME value as one string (nbformat may keep text as a list of lines). */
function text(value: unknown): string | null {
  if (typeof value === 'string') {
    return value;
  }
  if (Array.isArray(value) && value.every(v => typeof v === 'string')) {
    return value.join('');
  }
  return null;
}

function replaced(value: unknown, before: string, after: string): unknown {
  const whole = text(value);
  return whole === null ? value : whole.replace(before, () => after);
}

/**
 * The bundle of a stub output of `handle` once its exact count is `tokens`: what the kernel's
 * `stub_bundle` renders for the exact stub. Null when the bundle is not a stub of `handle`
 * still counting (nothing to change).
 */
export function exactTokensBundle(data: Bundle, handle: string, tokens: number): Bundle | null {
  const stub = data[STUB_MIME_TYPE];
  if (typeof stub !== 'object' || stub === null || Array.isArray(stub)) {
    return null;
  }
  const old = stub as Bundle;
  if (old.handle !== handle || old.tokens_exact !== false) {
    return null;
  }
  const exact = { ...old, tokens, tokens_exact: true };
  const [before, after] = [tokensPhrase(old), tokensPhrase(exact)];
  const bundle: Bundle = { ...data, [STUB_MIME_TYPE]: exact };
  if ('text/plain' in data) {
    bundle['text/plain'] = replaced(data['text/plain'], before, after);
  }
  if ('text/html' in data) {
    bundle['text/html'] = replaced(data['text/html'], escapeHtml(before), escapeHtml(after));
  }
  return bundle;
}

/**
 * Rewrite every stub output still counting in `outputs` whose handle has a landed count in
 * `counts` (handle → exact tokens); returns how many changed. Setting the output (not the DOM)
 * re-renders it and is what a save writes.
 */
export function applyTokensToOutputs(
  outputs: IOutputList,
  counts: ReadonlyMap<string, number>
): number {
  let changed = 0;
  for (let i = 0; i < outputs.length; i++) {
    const output = outputs.get(i);
    if (output.type !== 'display_data' && output.type !== 'execute_result') {
      continue;
    }
    const bundle = output.data as Bundle;
    const handle = (bundle[STUB_MIME_TYPE] as Bundle | undefined)?.handle;
    const tokens = typeof handle === 'string' ? counts.get(handle) : undefined;
    const data = tokens === undefined ? null : exactTokensBundle(bundle, handle as string, tokens);
    if (data) {
      outputs.set(i, { ...output.toJSON(), data } as never);
      changed += 1;
    }
  }
  return changed;
}
