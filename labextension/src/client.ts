/**
 * The front-end end of the bridge: one comm to one kernel's `jupyter_scratchpad` target.
 *
 * Two ways in, both ending with the kernel's `hello`:
 * - the page opens a comm to the kernel's target (once per kernel, and on Refresh); a kernel that
 *   has not loaded the extension closes it at once, which is how "not loaded" is told apart;
 * - `%load_ext jupyter_scratchpad` opens a comm to this page's target (the announcement), so a
 *   page that found the kernel "not loaded" needs no retry after every cell.
 */

import type { Kernel, KernelMessage } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import {
  buildRequest,
  COMM_TARGET,
  IArguments,
  IHelloResult,
  IResults,
  isCompatible,
  ITokensEvent,
  parseEvent,
  parseReply,
  PROTOCOL_VERSION,
  RequestType,
  ScratchpadRequestError
} from './protocol';

/** `ready`: talking; `not-loaded`: the kernel has no target; others say why not. */
export type ConnectionState =
  | 'idle'
  | 'connecting'
  | 'ready'
  | 'not-loaded'
  | 'incompatible'
  | 'unsupported'
  | 'error';

interface IPending {
  resolve(result: unknown): void;
  reject(error: Error): void;
  timer: ReturnType<typeof setTimeout>;
}

export class ScratchpadClient {
  constructor(
    readonly kernel: Kernel.IKernelConnection,
    private readonly timeoutMs = 15000
  ) {
    kernel.statusChanged.connect(this._onKernelStatus, this);
    this._onAnnounce = this._onAnnounce.bind(this);
    kernel.registerCommTarget(COMM_TARGET, this._onAnnounce);
  }

  get state(): ConnectionState {
    return this._state;
  }

  /** Why the state is what it is, in words for the sidebar. */
  get detail(): string {
    return this._detail;
  }

  get hello(): IHelloResult | null {
    return this._hello;
  }

  get stateChanged(): ISignal<this, ConnectionState> {
    return this._stateChanged;
  }

  /** Events the kernel pushes unasked: an exact token count that landed after a spill. */
  get events(): ISignal<this, ITokensEvent> {
    return this._events;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  /**
   * Open the comm if it is not open; resolves with the resulting state.
   *
   * A kernel found "not loaded" is not asked again unless `retry` (the Refresh button): it
   * announces itself when the extension is loaded.
   */
  connect(retry = false): Promise<ConnectionState> {
    const settled = this._state === 'ready' || (this._state === 'not-loaded' && !retry);
    if (settled || this._disposed) {
      return Promise.resolve(this._state);
    }
    if (!this._connecting) {
      this._connecting = this._open().finally(() => {
        this._connecting = null;
      });
    }
    return this._connecting;
  }

  /** Send one request; resolves with its result or rejects with a `ScratchpadRequestError`. */
  async request<T extends RequestType>(type: T, args: IArguments[T]): Promise<IResults[T]> {
    if ((await this.connect()) !== 'ready' || !this._comm) {
      throw new ScratchpadRequestError('not_loaded', this._detail);
    }
    const id = `r${++this._counter}`;
    const message = buildRequest(type, id, args);
    return new Promise<IResults[T]>((resolve, reject) => {
      const timer = setTimeout(() => {
        this._pending.delete(id);
        reject(new ScratchpadRequestError('timeout', `the kernel did not answer ${type} in time`));
      }, this.timeoutMs);
      this._pending.set(id, { resolve: resolve as (r: unknown) => void, reject, timer });
      this._comm!.send(message as unknown as KernelMessage.ICommMsgMsg['content']['data']);
    });
  }

  dispose(): void {
    if (this._disposed) {
      return;
    }
    this._disposed = true;
    this.kernel.statusChanged.disconnect(this._onKernelStatus, this);
    this.kernel.removeCommTarget(COMM_TARGET, this._onAnnounce);
    this._drop('closed', 'the client was disposed');
    Signal.clearData(this);
  }

  private _open(): Promise<ConnectionState> {
    if (!this.kernel.handleComms) {
      // JupyterLab hands a kernel's comms to one connection only (the first notebook or console
      // opened on it); the kernel supports them, this page's other connection to it does not.
      this._setState(
        'unsupported',
        'another notebook or console on this page is connected to the same kernel and handles its ' +
          'comms: use the scratchpad sidebar and explorer from there'
      );
      return Promise.resolve(this._state);
    }
    this._setState('connecting', 'connecting to the kernel');
    const comm = this.kernel.createComm(COMM_TARGET);
    this._comm = comm;
    return new Promise<ConnectionState>(resolve => {
      const timer = setTimeout(() => {
        this._closeComm(comm);
        this._setState('error', 'the kernel did not answer; it may be busy');
        resolve(this._state);
      }, this.timeoutMs);
      const settle = (state: ConnectionState, detail: string) => {
        clearTimeout(timer);
        this._setState(state, detail);
        resolve(state);
      };
      this._wire(comm, data => {
        if (this._state === 'connecting') {
          this._onHello(data, settle);
          return true;
        }
        return false;
      });
      const onClose = comm.onClose;
      comm.onClose = msg => {
        const result = onClose(msg); // sets the detail from the close data first
        if (this._state === 'connecting') {
          settle('not-loaded', this._detail);
        }
        return result;
      };
      comm.open({ protocol: PROTOCOL_VERSION, id: 'hello' });
    });
  }

  /** Route a comm's messages: `first` may claim one (the hello), the rest are replies. */
  private _wire(comm: Kernel.IComm, first: (data: unknown) => boolean): void {
    comm.onMsg = msg => {
      const event = parseEvent(msg.content.data);
      if (event) {
        this._events.emit(event);
      } else if (!first(msg.content.data)) {
        this._onReply(msg.content.data);
      }
    };
    comm.onClose = msg => {
      if (this._comm !== comm) {
        return; // an older comm, replaced by a newer one
      }
      this._comm = null;
      const data = (msg.content.data ?? {}) as { reason?: string };
      const detail = data.reason ?? 'the kernel has not loaded jupyter_scratchpad';
      this._rejectAll('not_loaded', detail);
      if (!this._disposed && this._state !== 'connecting') {
        this._setState('not-loaded', detail);
      } else {
        this._detail = detail;
      }
    };
  }

  /** The kernel opened a comm to this page: `%load_ext` ran; its open data is the hello. */
  private _onAnnounce(comm: Kernel.IComm, msg: KernelMessage.ICommOpenMsg): void {
    if (this._disposed || this._state === 'connecting') {
      comm.close(); // a connection of our own is being made; keep one comm per kernel
      return;
    }
    const previous = this._comm;
    this._comm = comm;
    this._closeComm(previous);
    this._wire(comm, () => false);
    this._onHello(msg.content.data, (state, detail) => this._setState(state, detail));
  }

  private _onHello(data: unknown, settle: (s: ConnectionState, d: string) => void): void {
    const reply = parseReply(data);
    const protocol = (data as { protocol?: unknown } | null)?.protocol;
    if (!isCompatible(protocol)) {
      this._closeComm(this._comm);
      settle(
        'incompatible',
        `the kernel speaks protocol ${String(protocol)}, this page ${PROTOCOL_VERSION}`
      );
      return;
    }
    if (!reply || !reply.ok || reply.type !== 'hello') {
      this._closeComm(this._comm);
      settle('error', 'the kernel sent an unexpected greeting');
      return;
    }
    this._hello = reply.result as IHelloResult;
    settle('ready', `run ${this._hello.run_id}, model ${this._hello.model}`);
  }

  private _onReply(data: unknown): void {
    const reply = parseReply(data);
    const pending = reply?.id ? this._pending.get(reply.id) : undefined;
    if (!reply || !pending) {
      return; // a late reply to a request that timed out
    }
    this._pending.delete(reply.id!);
    clearTimeout(pending.timer);
    if (reply.ok) {
      pending.resolve(reply.result);
    } else {
      pending.reject(new ScratchpadRequestError(reply.error.code, reply.error.message));
    }
  }

  private _onKernelStatus(_: Kernel.IKernelConnection, status: Kernel.Status): void {
    // A restarted kernel has forgotten every comm and every loaded extension.
    if (status === 'restarting' || status === 'autorestarting' || status === 'dead') {
      this._drop('not_loaded', 'the kernel restarted');
      this._setState('idle', 'the kernel restarted');
    }
  }

  private _drop(code: 'closed' | 'not_loaded', detail: string): void {
    this._closeComm(this._comm);
    this._comm = null;
    this._rejectAll(code, detail);
  }

  private _closeComm(comm: Kernel.IComm | null): void {
    if (comm && !comm.isDisposed) {
      try {
        comm.close();
      } catch {
        // the kernel is gone; nothing to tell it
      }
    }
  }

  private _rejectAll(code: 'closed' | 'not_loaded', detail: string): void {
    for (const [id, pending] of this._pending) {
      clearTimeout(pending.timer);
      pending.reject(new ScratchpadRequestError(code, detail));
      this._pending.delete(id);
    }
  }

  private _setState(state: ConnectionState, detail: string): void {
    this._detail = detail;
    if (state !== this._state) {
      this._state = state;
      this._stateChanged.emit(state);
    }
  }

  private _state: ConnectionState = 'idle';
  private _detail = 'not connected yet';
  private _hello: IHelloResult | null = null;
  private _comm: Kernel.IComm | null = null;
  private _connecting: Promise<ConnectionState> | null = null;
  private _pending = new Map<string, IPending>();
  private _counter = 0;
  private _disposed = false;
  private _stateChanged = new Signal<this, ConnectionState>(this);
  private _events = new Signal<this, ITokensEvent>(this);
}
