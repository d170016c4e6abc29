/**
 * A landed exact token count rewrites the stub outputs: checked against bundles the kernel's
 * `stub_bundle` rendered (tests/fixtures/token_updates.json, from tests/comm/test_token_updates.py)
 * and on JupyterLab's own output model, whose JSON is what a save writes.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
// the model alone: the package's index pulls in widgets jsdom cannot load
import { OutputAreaModel } from '@jupyterlab/outputarea/lib/model';
import { describe, expect, it } from 'vitest';

import { STUB_MIME_TYPE } from '../src/protocol';
import { applyTokensToOutputs, exactTokensBundle } from '../src/tokens';

interface ICase {
  name: string;
  handle: string;
  tokens: number;
  before: Record<string, unknown>;
  after: Record<string, unknown>;
}

const cases: ICase[] = JSON.parse(
  readFileSync(join(__dirname, 'fixtures', 'token_updates.json'), 'utf8')
);

describe('exact token count', () => {
  it.each(cases.map(c => [c.name, c] as const))(
    'gives what the kernel renders for the exact stub (%s)',
    (_, c) => {
      expect(exactTokensBundle(c.before, c.handle, c.tokens)).toEqual(c.after);
    }
  );

  it('reads text kept as a list of lines, as nbformat may store it', () => {
    const c = cases[0];
    const lines = (c.before['text/plain'] as string).split(/(?<=\n)/);
    const bundle = exactTokensBundle({ ...c.before, 'text/plain': lines }, c.handle, c.tokens);
    expect(bundle!['text/plain']).toBe(c.after['text/plain']);
  });

  it('leaves other handles, exact stubs and other outputs alone', () => {
    const c = cases[0];
    expect(exactTokensBundle(c.before, 'another_handle', c.tokens)).toBeNull();
    expect(exactTokensBundle(c.after, c.handle, c.tokens + 1)).toBeNull();
    expect(exactTokensBundle({ 'text/plain': 'hello' }, c.handle, c.tokens)).toBeNull();
  });

  it("rewrites the notebook's output models, so a save holds the exact count", () => {
    const [one, two] = [cases[0], cases.find(c => c.handle !== cases[0].handle)!];
    const outputs = new OutputAreaModel({
      values: [
        { output_type: 'stream', name: 'stdout', text: 'before\n' },
        { output_type: 'execute_result', execution_count: 3, data: one.before, metadata: {} },
        { output_type: 'display_data', data: two.before, metadata: { keep: 1 } },
        { output_type: 'display_data', data: one.before, metadata: {} }
      ]
    });
    expect(applyTokensToOutputs(outputs, new Map([[one.handle, one.tokens]]))).toBe(2);
    const saved = outputs.toJSON() as unknown as Record<string, unknown>[];
    expect(saved[0]).toEqual({ output_type: 'stream', name: 'stdout', text: 'before\n' });
    expect(saved[1]).toEqual({
      output_type: 'execute_result',
      execution_count: 3,
      data: one.after,
      metadata: {}
    });
    expect(saved[2]).toEqual({
      output_type: 'display_data',
      data: two.before,
      metadata: { keep: 1 }
    });
    expect(saved[3].data).toEqual(one.after);
    expect(JSON.stringify(saved[1])).not.toContain('still counting');
    // a second event for the same handle changes nothing more
    expect(applyTokensToOutputs(outputs, new Map([[one.handle, one.tokens]]))).toBe(0);
    expect(
      (saved[1].data as Record<string, { tokens_exact: boolean }>)[STUB_MIME_TYPE].tokens_exact
    ).toBe(true);
  });

  it('gives a stub that came after its count the count that landed', () => {
    const [one, two] = [cases[0], cases.find(c => c.handle !== cases[0].handle)!];
    const outputs = new OutputAreaModel({
      values: [
        { output_type: 'display_data', data: one.before, metadata: {} },
        { output_type: 'display_data', data: two.before, metadata: {} }
      ]
    });
    const landed = new Map([
      ['older_handle', 12],
      [two.handle, two.tokens]
    ]);
    expect(applyTokensToOutputs(outputs, landed)).toBe(1);
    const saved = outputs.toJSON() as unknown as Record<string, unknown>[];
    expect(saved[0].data).toEqual(one.before);
    expect(saved[1].data).toEqual(two.after);
  });
});
