/**
 * The model's refresh against a kernel that answers in order and holds a budget until the
 * exact token counts are in (as `pad.usage()` does): the replies are the real kernel's
 * (tests/fixtures/messages.json); the kernel here is a stand-in for its ordering only.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import type { ISessionContext } from '@jupyterlab/apputils';
import { Signal } from '@lumino/signaling';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';

import type { ScratchpadClient } from '../src/client';
import { ScratchpadModel } from '../src/model';
import { IListResult, RequestType, ScratchpadRequestError } from '../src/protocol';
import { ISidebarActions, renderSidebar } from '../src/sidebarView';

const messages = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'messages.json'), 'utf8'));
const SPILLED: IListResult = messages.list_reply.result;
const EMPTY: IListResult = { ...SPILLED, total_entries: 0, entries: [] };

/** One request at a time, in the order sent, like a kernel's shell channel. */
class InOrderKernel {
  state = 'ready';
  detail = 'run notebook';
  stateChanged = new Signal<this, string>(this);
  events = new Signal<this, unknown>(this);
  sent: RequestType[] = [];
  list: IListResult | Error = EMPTY;
  /** Settles when the exact counts of the spills are in (a budget waits for it). */
  counts: Promise<void> = Promise.resolve();
  private _queue: Promise<unknown> = Promise.resolve();

  connect(): Promise<string> {
    return Promise.resolve(this.state);
  }

  request(type: RequestType): Promise<unknown> {
    this.sent.push(type);
    const answer = (): Promise<unknown> => {
      if (type === 'budget') {
        return this.counts.then(() => messages.budget_reply.result);
      }
      return this.list instanceof Error ? Promise.reject(this.list) : Promise.resolve(this.list);
    };
    const reply = this._queue.then(answer);
    this._queue = reply.catch(() => undefined);
    return reply;
  }
}

const actions: ISidebarActions = {
  explore: () => undefined,
  extend: () => undefined,
  remove: () => undefined,
  refresh: () => undefined
};

function shown(model: ScratchpadModel): string {
  return renderSidebar(model.snapshot, actions, Date.now()).textContent ?? '';
}

async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 100 && !condition(); i++) {
    await Promise.resolve();
  }
  expect(condition()).toBe(true);
}

function modelOn(kernel: InOrderKernel): ScratchpadModel {
  const model = new ScratchpadModel(
    () => true,
    () => kernel as unknown as ScratchpadClient
  );
  const session = { session: { kernel: {} }, kernelChanged: new Signal({}) };
  model.setSession(session as unknown as ISessionContext, 'n.ipynb');
  return model;
}

describe('sidebar refresh', () => {
  beforeEach(() => void vi.useFakeTimers()); // no debounced refresh fires on its own
  afterEach(() => void vi.useRealTimers());

  it('shows a first large spill while the budget still waits for its exact count', async () => {
    const kernel = new InOrderKernel();
    const model = modelOn(kernel);
    await model.refreshNow();
    expect(shown(model)).toContain('No live spilled outputs');

    kernel.list = SPILLED;
    let timedOut: (reason: Error) => void = () => undefined;
    kernel.counts = new Promise((_, reject) => (timedOut = reject));
    const refreshing = model.refreshNow();
    await until(() => model.snapshot.list?.total_entries === 1);
    expect(kernel.sent.slice(-2)).toEqual(['list', 'budget']);
    expect(shown(model)).toContain(SPILLED.entries[0].handle);
    expect(shown(model)).not.toContain('No live spilled outputs');

    // the count outlasts the client's timeout: the list stays, the budget says it failed
    timedOut(new ScratchpadRequestError('timeout', 'the kernel did not answer budget in time'));
    await refreshing;
    expect(shown(model)).toContain(SPILLED.entries[0].handle);
    expect(shown(model)).toContain(
      'The budget was not updated: the kernel did not answer budget in time'
    );
  });

  it('says a failed list failed, instead of showing an old empty one', async () => {
    const kernel = new InOrderKernel();
    const model = modelOn(kernel);
    await model.refreshNow();
    expect(shown(model)).toContain('No live spilled outputs');

    kernel.list = new ScratchpadRequestError('timeout', 'the kernel did not answer list in time');
    await model.refreshNow();
    const text = shown(model);
    expect(text).toContain(
      'Could not list the scratchpad: the kernel did not answer list in time. Press Refresh'
    );
    expect(text).not.toContain('No live spilled outputs');

    kernel.list = SPILLED; // the next refresh that works shows the list again
    await model.refreshNow();
    expect(shown(model)).toContain(SPILLED.entries[0].handle);
    expect(shown(model)).not.toContain('Could not list');
  });
});
