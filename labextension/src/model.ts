/**
 * What the sidebar and the status bar show: the active notebook's kernel's scratchpad.
 *
 * Refreshes are driven by events, never by a timer: a cell finished executing, the active
 * notebook or its kernel changed, the sidebar was shown. The entry list is only fetched when a
 * view that shows it is visible; the budget (the status bar is always there) every time.
 */

import type { ISessionContext } from '@jupyterlab/apputils';
import type { Kernel } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import { applyTokens } from './card';
import { ConnectionState, ScratchpadClient } from './client';
import { IBudgetResult, IListResult, ITokensEvent, ScratchpadRequestError } from './protocol';

export interface ISnapshot {
  /** Name of the notebook (or null when no notebook is active). */
  notebook: string | null;
  state: ConnectionState | 'no-notebook' | 'no-kernel';
  detail: string;
  budget: IBudgetResult | null;
  list: IListResult | null;
  /** `Date.now()` when `list` arrived: time left counts down from there. */
  listReceivedAt: number;
  error: string | null;
}

const clients = new WeakMap<Kernel.IKernelConnection, ScratchpadClient>();

/** The one client of a kernel connection, shared by every view. */
export function clientFor(kernel: Kernel.IKernelConnection): ScratchpadClient {
  let client = clients.get(kernel);
  if (!client || client.isDisposed) {
    client = new ScratchpadClient(kernel);
    clients.set(kernel, client);
    // an exact token count landed: the cards of that handle on the page show it
    client.events.connect((_, event) => void applyTokens(document, event.handle, event.tokens));
    kernel.disposed.connect(() => client!.dispose());
  }
  return client;
}

export class ScratchpadModel {
  /** `wantsList()` says whether a view that lists entries is visible now. */
  constructor(private readonly wantsList: () => boolean) {}

  get snapshot(): ISnapshot {
    return this._snapshot;
  }

  get changed(): ISignal<this, ISnapshot> {
    return this._changed;
  }

  get client(): ScratchpadClient | null {
    const kernel = this._session?.session?.kernel;
    return kernel ? clientFor(kernel) : null;
  }

  /** Follow another notebook's session (null: no notebook is active). */
  setSession(session: ISessionContext | null, name: string | null): void {
    if (this._session) {
      this._session.kernelChanged.disconnect(this._onKernelChanged, this);
    }
    this._session = session;
    this._name = name;
    if (session) {
      session.kernelChanged.connect(this._onKernelChanged, this);
    }
    this._snapshot = { ...this._snapshot, budget: null, list: null, error: null };
    this.refresh();
  }

  get session(): ISessionContext | null {
    return this._session;
  }

  /** Ask for a refresh soon; bursts (run all cells) coalesce into one round trip. */
  refresh(): void {
    if (this._timer !== null) {
      return;
    }
    this._timer = setTimeout(() => {
      this._timer = null;
      void this.refreshNow();
    }, 150);
  }

  /** Fetch the budget (and the entries when listed) from the kernel now; `retry` a "not loaded". */
  async refreshNow(retry = false): Promise<ISnapshot> {
    const generation = ++this._generation;
    const client = this.client;
    this._watch(client);
    if (!this._session) {
      return this._publish(generation, { state: 'no-notebook', detail: 'no notebook is active' });
    }
    if (!client) {
      return this._publish(generation, {
        state: 'no-kernel',
        detail: 'the notebook has no kernel'
      });
    }
    const state = await client.connect(retry);
    if (state !== 'ready') {
      return this._publish(generation, { state, detail: client.detail, budget: null, list: null });
    }
    try {
      const budget = await client.request('budget', {});
      const list = this.wantsList() ? await client.request('list', {}) : this._snapshot.list;
      const listReceivedAt =
        list === this._snapshot.list ? this._snapshot.listReceivedAt : Date.now();
      return this._publish(generation, {
        state: client.state,
        detail: client.detail,
        budget,
        list,
        listReceivedAt,
        error: null
      });
    } catch (reason) {
      const message = reason instanceof ScratchpadRequestError ? reason.message : String(reason);
      return this._publish(generation, {
        state: client.state,
        detail: client.detail,
        error: message
      });
    }
  }

  private _publish(generation: number, change: Partial<ISnapshot>): ISnapshot {
    // An older refresh that finishes late must not overwrite a newer one.
    if (generation === this._generation) {
      this._snapshot = { ...this._snapshot, notebook: this._name, ...change };
      this._changed.emit(this._snapshot);
    }
    return this._snapshot;
  }

  /** Follow the client's state: the kernel announcing itself (`%load_ext`) or going away. */
  private _watch(client: ScratchpadClient | null): void {
    if (client === this._watched) {
      return;
    }
    this._watched?.stateChanged.disconnect(this._onClientState, this);
    this._watched?.events.disconnect(this._onEvent, this);
    this._watched = client;
    client?.stateChanged.connect(this._onClientState, this);
    client?.events.connect(this._onEvent, this);
  }

  /** A landed token count changes the sidebar's list and the budget's totals. */
  private _onEvent(_: ScratchpadClient, _event: ITokensEvent): void {
    this.refresh();
  }

  private _onClientState(_: ScratchpadClient, state: ConnectionState): void {
    if (state === 'ready' || state === 'not-loaded' || state === 'idle') {
      this.refresh();
    }
  }

  private _onKernelChanged(): void {
    this._snapshot = { ...this._snapshot, budget: null, list: null };
    this.refresh();
  }

  private _session: ISessionContext | null = null;
  private _watched: ScratchpadClient | null = null;
  private _name: string | null = null;
  private _timer: ReturnType<typeof setTimeout> | null = null;
  private _generation = 0;
  private _snapshot: ISnapshot = {
    notebook: null,
    state: 'no-notebook',
    detail: 'no notebook is active',
    budget: null,
    list: null,
    listReceivedAt: 0,
    error: null
  };
  private _changed = new Signal<this, ISnapshot>(this);
}
