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
  /** Why the last list request failed (then `list` is out of date), or null. */
  listError: string | null;
  /** Why the last budget request failed, or null. */
  error: string | null;
}

const clients = new WeakMap<Kernel.IKernelConnection, ScratchpadClient>();

/** Told of every kernel's landed token counts (the plugin: it rewrites the notebooks' outputs). */
export type TokensHandler = (kernel: Kernel.IKernelConnection, event: ITokensEvent) => void;
const tokensHandlers = new Set<TokensHandler>();

/** Hear the exact token counts every kernel sends from now on. */
export function onTokens(handler: TokensHandler): void {
  tokensHandlers.add(handler);
}

/** The kernel connection of kernel `id` that handles its comms, on this page (the plugin says). */
export type CommKernelFinder = (id: string) => Kernel.IKernelConnection | null;
let commKernelFinder: CommKernelFinder = () => null;

/** Tell the clients how to find the comm-handling connection of a kernel (the plugin does). */
export function setCommKernelFinder(finder: CommKernelFinder): void {
  commKernelFinder = finder;
}

/**
 * The connection that handles `kernel`'s comms: itself, or (a second notebook or console opened
 * on a kernel already in use: JupyterLab gives only the first connection to a kernel its comms)
 * the one that does, or null when none is found.
 */
export function commKernelOf(kernel: Kernel.IKernelConnection): Kernel.IKernelConnection | null {
  if (kernel.handleComms) {
    return kernel;
  }
  const found = commKernelFinder(kernel.id);
  return found && found.handleComms && !found.isDisposed && found.id === kernel.id ? found : null;
}

/**
 * The one client of a kernel, shared by every view: the client of the connection that handles
 * the kernel's comms, whichever connection (notebook) asks.
 */
export function clientFor(kernel: Kernel.IKernelConnection): ScratchpadClient {
  kernel = commKernelOf(kernel) ?? kernel;
  let client = clients.get(kernel);
  if (!client || client.isDisposed) {
    client = new ScratchpadClient(kernel);
    clients.set(kernel, client);
    // an exact token count landed: the notebooks' outputs of that handle get it (saved with
    // them), and any other card of it on the page (a console's) shows it
    client.events.connect((_, event) => {
      for (const handler of tokensHandlers) {
        handler(kernel, event);
      }
      applyTokens(document, event.handle, event.tokens);
    });
    kernel.disposed.connect(() => client!.dispose());
  }
  return client;
}

/** A request's result, or why it failed (in words), without rejecting. */
async function settle<T>(request: Promise<T>): Promise<{ value: T } | { error: string }> {
  try {
    return { value: await request };
  } catch (reason) {
    return { error: reason instanceof ScratchpadRequestError ? reason.message : String(reason) };
  }
}

export class ScratchpadModel {
  /**
   * `wantsList()` says whether a view that lists entries is visible now; `clientOf` gives a
   * kernel's client (the one shared client, unless a test gives its own).
   */
  constructor(
    private readonly wantsList: () => boolean,
    private readonly clientOf: (kernel: Kernel.IKernelConnection) => ScratchpadClient = clientFor
  ) {}

  get snapshot(): ISnapshot {
    return this._snapshot;
  }

  get changed(): ISignal<this, ISnapshot> {
    return this._changed;
  }

  get client(): ScratchpadClient | null {
    const kernel = this._session?.session?.kernel;
    return kernel ? this.clientOf(kernel) : null;
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
    this._snapshot = { ...this._snapshot, budget: null, list: null, listError: null, error: null };
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
    // The list is asked first and shown as soon as it comes: the kernel answers in order, and a
    // budget waits for the exact token counts of large spills (seconds for 85 MB), so asked
    // first it held the list back until the count was in, or past the timeout (the sidebar
    // stayed on "No live spilled outputs" after a first large spill).
    const listing = this.wantsList() ? settle(client.request('list', {})) : null;
    const budgeting = settle(client.request('budget', {}));
    if (listing) {
      const list = await listing;
      this._publish(
        generation,
        'value' in list
          ? {
              state: client.state,
              detail: client.detail,
              list: list.value,
              listReceivedAt: Date.now(),
              listError: null
            }
          : { state: client.state, detail: client.detail, listError: list.error }
      );
    }
    const budget = await budgeting;
    return this._publish(
      generation,
      'value' in budget
        ? { state: client.state, detail: client.detail, budget: budget.value, error: null }
        : {
            state: client.state,
            detail: client.detail,
            error: `The budget was not updated: ${budget.error}`
          }
    );
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
    this._snapshot = { ...this._snapshot, budget: null, list: null, listError: null };
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
    listError: null,
    error: null
  };
  private _changed = new Signal<this, ISnapshot>(this);
}
