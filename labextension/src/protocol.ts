/**
 * The JupyterLab ↔ kernel protocol: message types, request building and reply checking.
 *
 * Mirrors `jupyter_scratchpad/comm/_protocol.py`; both sides are tested against the JSON
 * Schemas in `jupyter_scratchpad/comm/schemas/`. The protocol version is not the package
 * version: a minor bump adds optional fields, a major bump is refused by the other side.
 */

export const COMM_TARGET = 'jupyter_scratchpad';
export const PROTOCOL_VERSION = '1.1';
export const EXPLORER_MIME_TYPE = 'application/vnd.jupyter.scratchpad.explorer+json';
export const STUB_MIME_TYPE = 'application/vnd.jupyter.scratchpad.stub+json';

export type RequestType =
  | 'hello'
  | 'list'
  | 'budget'
  | 'stub'
  | 'delete'
  | 'extend'
  | 'explore'
  | 'explorer';

export type ErrorCode =
  | 'invalid_request'
  | 'unsupported_protocol'
  | 'unknown_type'
  | 'not_found'
  | 'not_loaded'
  | 'internal_error'
  | 'timeout'
  | 'closed';

export interface IStub {
  handle: string;
  source_tool: string | null;
  server?: string | null;
  format: 'json' | 'jsonl' | 'markdown' | 'text';
  size: number;
  lines: number;
  tokens: number;
  tokens_model?: string;
  tokens_estimate?: boolean;
  /** false while the exact count of a large spill is computed in the background (`tokens` is a lower bound) */
  tokens_exact?: boolean;
  preview: string;
  preview_lines: number;
  note: string;
  schema?: string[];
  next: string[];
  expires_at: number;
  /** why it is held at this place of the cell's outputs, e.g. after the 256 lines of a stream shown above */
  where?: string;
}

export interface IEntrySummary {
  handle: string;
  source_tool: string | null;
  server: string | null;
  format: string;
  size: number;
  lines: number | null;
  tokens: number | null;
  created_at: number;
  expires_at: number;
  ttl_left_s: number;
}

export interface INoteSummary {
  key: string;
  size: number;
  preview: string;
  created_at: number;
  expires_at: number;
  ttl_left_s: number;
}

export interface IHelloResult {
  protocol: string;
  package_version: string;
  run_id: string;
  agent_id: string;
  model: string;
}

export interface IListResult {
  now: number;
  total_entries: number;
  total_notes: number;
  entries: IEntrySummary[];
  notes: INoteSummary[];
}

export interface IBudgetResult {
  model: string;
  context_window: number;
  usable: number;
  used: number;
  remaining: number;
  max_extraction_tokens: number;
  safety_margin: number;
  tokens_intercepted: number;
  tokens_extracted: number;
  spills: number;
}

export interface IChangeResult {
  kind: 'handle' | 'note';
  key: string;
}

export interface IResults {
  hello: IHelloResult;
  list: IListResult;
  budget: IBudgetResult;
  stub: { stub: IStub };
  delete: IChangeResult & { deleted: boolean };
  extend: IChangeResult & { expires_at: number; ttl_left_s: number };
  explore: { model_id: string; handle: string | null };
  explorer: { model_id: string; live: boolean; handle: string | null };
}

/** The entry a delete or extend acts on: a spilled output, or a note. */
export type Target = { handle: string } | { key: string };

export interface IArguments {
  hello: Record<string, never>;
  list: Record<string, never>;
  budget: Record<string, never>;
  stub: { handle: string };
  delete: Target;
  extend: Target & { ttl_s?: number };
  explore: { handle?: string };
  explorer: { model_id: string };
}

export type Request<T extends RequestType = RequestType> = {
  protocol: string;
  id: string;
  type: T;
} & IArguments[T];

export interface IOkReply<T extends RequestType = RequestType> {
  protocol: string;
  id: string | null;
  type: T;
  ok: true;
  result: IResults[T];
}

export interface IErrorReply {
  protocol: string;
  id: string | null;
  type: string | null;
  ok: false;
  error: { code: ErrorCode; message: string };
}

export type Reply = IOkReply | IErrorReply;

/** A request the kernel refused, or one that never got an answer. */
export class ScratchpadRequestError extends Error {
  constructor(
    readonly code: ErrorCode,
    message: string
  ) {
    super(message);
    this.name = 'ScratchpadRequestError';
  }
}

const HANDLE = /^[a-z0-9_]{1,64}$/;
const MODEL_ID = /^[A-Za-z0-9_-]{1,64}$/;

/** Whether `handle` is a valid scratchpad handle (`[a-z0-9_]`, at most 64 characters). */
export function isHandle(handle: unknown): handle is string {
  return typeof handle === 'string' && HANDLE.test(handle);
}

/** Build a request; bad arguments throw here rather than come back from the kernel. */
export function buildRequest<T extends RequestType>(
  type: T,
  id: string,
  args: IArguments[T]
): Request<T> {
  const a = args as Record<string, unknown>;
  if ('handle' in a && !isHandle(a.handle)) {
    throw new ScratchpadRequestError('invalid_request', `not a handle: ${String(a.handle)}`);
  }
  if ('ttl_s' in a && !(typeof a.ttl_s === 'number' && a.ttl_s >= 1 && isFinite(a.ttl_s))) {
    throw new ScratchpadRequestError(
      'invalid_request',
      'ttl_s must be a number of seconds, at least 1'
    );
  }
  if ('model_id' in a && !(typeof a.model_id === 'string' && MODEL_ID.test(a.model_id))) {
    throw new ScratchpadRequestError(
      'invalid_request',
      `not a widget model id: ${String(a.model_id)}`
    );
  }
  return { protocol: PROTOCOL_VERSION, id, type, ...args } as Request<T>;
}

/** The major part of a version string like "1.0", or null. */
export function majorOf(version: unknown): string | null {
  if (typeof version !== 'string' || !/^\d+\.\d+$/.test(version)) {
    return null;
  }
  return version.split('.')[0];
}

/** Whether a peer speaking `version` can be talked to. */
export function isCompatible(version: unknown): boolean {
  return majorOf(version) === majorOf(PROTOCOL_VERSION);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

/** Unsolicited: the exact token count of a large spill landed (the stub carried a lower bound). */
export interface ITokensEvent {
  protocol: string;
  type: 'event';
  event: 'tokens';
  handle: string;
  tokens: number;
}

/** A kernel message that is an event (not a reply); returns it typed, or null. */
export function parseEvent(message: unknown): ITokensEvent | null {
  if (!isObject(message) || message.type !== 'event' || !isCompatible(message.protocol)) {
    return null;
  }
  if (message.event !== 'tokens' || !isHandle(message.handle)) {
    return null;
  }
  const tokens = message.tokens;
  if (typeof tokens !== 'number' || !Number.isInteger(tokens) || tokens < 0) {
    return null;
  }
  return message as unknown as ITokensEvent;
}

/**
 * Check a message from the kernel has the reply envelope; returns it typed, or null.
 *
 * The result's fields are trusted to the kernel's schema-tested side; only the envelope is
 * checked here, so that a newer minor version's extra fields pass through.
 */
export function parseReply(message: unknown): Reply | null {
  if (!isObject(message) || typeof message.ok !== 'boolean') {
    return null;
  }
  if (!isCompatible(message.protocol)) {
    return null;
  }
  if (message.id !== null && typeof message.id !== 'string') {
    return null;
  }
  if (message.ok) {
    return isObject(message.result) && typeof message.type === 'string'
      ? (message as unknown as IOkReply)
      : null;
  }
  const error = message.error;
  if (!isObject(error) || typeof error.code !== 'string' || typeof error.message !== 'string') {
    return null;
  }
  return message as unknown as IErrorReply;
}

const STUB_FORMATS = ['json', 'jsonl', 'markdown', 'text'];

/** Check a MIME payload is a stub; returns it, or a message that says what is wrong. */
export function parseStub(data: unknown): IStub | string {
  if (!isObject(data)) {
    return 'the payload is not a JSON object';
  }
  if (!isHandle(data.handle)) {
    return 'it has no valid handle';
  }
  for (const key of ['size', 'lines', 'tokens', 'preview_lines', 'expires_at']) {
    if (typeof data[key] !== 'number') {
      return `${key} is not a number`;
    }
  }
  for (const key of ['preview', 'note']) {
    if (typeof data[key] !== 'string') {
      return `${key} is not a string`;
    }
  }
  if (!STUB_FORMATS.includes(data.format as string)) {
    return `unknown format ${String(data.format)}`;
  }
  if (!Array.isArray(data.next) || (data.schema !== undefined && !Array.isArray(data.schema))) {
    return 'next or schema is not a list';
  }
  return data as unknown as IStub;
}

/** What a saved explorer output carries: its widget's model id and a summary to show without it. */
export interface IExplorerSummary {
  model_id: string;
  handle: string | null;
  title: string;
  lines: string[];
  again: string;
}

/** Check a MIME payload is an explorer summary; returns it, or a message that says what is wrong. */
export function parseExplorerSummary(data: unknown): IExplorerSummary | string {
  if (!isObject(data)) {
    return 'the payload is not a JSON object';
  }
  if (typeof data.model_id !== 'string' || typeof data.title !== 'string') {
    return 'it has no model id or title';
  }
  if (!Array.isArray(data.lines) || !data.lines.every(l => typeof l === 'string')) {
    return 'lines is not a list of strings';
  }
  return data as unknown as IExplorerSummary;
}
