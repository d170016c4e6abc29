/**
 * The front-end end of the bridge: one comm to one kernel's `jupyter_scratchpad` target.
 *
 * Opening a comm to a target the kernel has not registered makes the kernel close it at once:
 * that is how "the extension is not loaded in this kernel" is told apart from "it is".
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

  get isDisposed(): boolean {
    return this._disposed;
  }

  /** Open the comm if it is not open; resolves with the resulting state. */
  connect(): Promise<ConnectionState> {
    if (this._state === 'ready' || this._disposed) {
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
    this._drop('closed', 'the client was disposed');
    Signal.clearData(this);
  }

  private _open(): Promise<ConnectionState> {
    if (!this.kernel.handleComms) {
      this._setState('unsupported', 'this kernel connection does not handle comms');
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
      comm.onMsg = msg => {
        if (this._state === 'connecting') {
          this._onHello(msg.content.data, settle);
        } else {
          this._onReply(msg.content.data);
        }
      };
      comm.onClose = msg => {
        if (this._comm === comm) {
          this._comm = null;
        }
        const data = (msg.content.data ?? {}) as { reason?: string };
        const detail = data.reason ?? 'the kernel has not loaded jupyter_scratchpad';
        this._rejectAll('not_loaded', detail);
        if (this._state === 'connecting') {
          settle('not-loaded', detail);
        } else if (!this._disposed) {
          this._setState('not-loaded', detail);
        }
      };
      comm.open({ protocol: PROTOCOL_VERSION, id: 'hello' });
    });
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
}
