/**
 * Requests built here, and replies made by the real kernel handlers (tests/fixtures, written by
 * tests/comm/test_comm_fixtures.py), checked against the JSON Schemas the Python tests use.
 */
import Ajv2020 from 'ajv/dist/2020';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';

import {
  buildRequest,
  isCompatible,
  parseReply,
  parseStub,
  PROTOCOL_VERSION,
  RequestType,
  ScratchpadRequestError
} from '../src/protocol';

const SCHEMAS = join(__dirname, '..', '..', 'jupyter_scratchpad', 'comm', 'schemas');
const messages = JSON.parse(readFileSync(join(__dirname, 'fixtures', 'messages.json'), 'utf8'));

const ajv = new Ajv2020({ strict: false, allErrors: true });
const schemas: Record<string, object> = {};
for (const file of readdirSync(SCHEMAS)) {
  schemas[file.replace(/\.json$/, '')] = JSON.parse(readFileSync(join(SCHEMAS, file), 'utf8'));
}

/** Schema errors of `message` against schema `name` ([] when valid). */
function errors(name: string, message: unknown): string[] {
  const validate = ajv.compile(schemas[name]);
  return validate(message)
    ? []
    : (validate.errors ?? []).map(e => `${e.instancePath} ${e.message}`);
}

const TYPES: RequestType[] = [
  'hello',
  'list',
  'budget',
  'stub',
  'delete',
  'extend',
  'explore',
  'explorer'
];

describe('protocol version', () => {
  it('is the one every message schema pins', () => {
    for (const [name, schema] of Object.entries(schemas)) {
      if (name !== 'stub') {
        const props = (schema as { properties: { protocol: unknown } }).properties;
        expect(props.protocol, name).toEqual({ const: PROTOCOL_VERSION });
      }
    }
    expect(messages.protocol).toBe(PROTOCOL_VERSION);
  });

  it('accepts the same major and refuses another', () => {
    expect(isCompatible('1.0')).toBe(true);
    expect(isCompatible('1.7')).toBe(true);
    expect(isCompatible('2.0')).toBe(false);
    expect(isCompatible(1)).toBe(false);
    expect(isCompatible('1')).toBe(false);
  });
});

describe('requests', () => {
  it('are what the kernel expects, for every type', () => {
    for (const type of TYPES) {
      const fixture = messages[`${type}_request`];
      const { protocol, id, type: _type, ...args } = fixture;
      const built = buildRequest(type, id, args);
      expect(built).toEqual(fixture);
      expect(errors(`${type}_request`, built), type).toEqual([]);
      expect(protocol).toBe(PROTOCOL_VERSION);
      expect(_type).toBe(type);
    }
  });

  it('with a note key or a default ttl are valid too', () => {
    expect(errors('extend_request', buildRequest('extend', 'a', { key: 'plan' }))).toEqual([]);
    expect(errors('delete_request', buildRequest('delete', 'a', { handle: 'x_1' }))).toEqual([]);
  });

  it('with bad arguments throw before they are sent', () => {
    expect(() => buildRequest('stub', 'a', { handle: 'Not A Handle' })).toThrow(
      ScratchpadRequestError
    );
    expect(() => buildRequest('extend', 'a', { handle: 'h', ttl_s: -5 })).toThrow(/ttl_s/);
    expect(() => buildRequest('extend', 'a', { handle: 'h', ttl_s: NaN })).toThrow(/ttl_s/);
    expect(() => buildRequest('extend', 'a', { handle: 'h', ttl_s: 0.001 })).toThrow(/at least 1/);
    expect(() => buildRequest('explorer', 'a', { model_id: 'x\n' })).toThrow(/model id/);
  });

  it('the schemas refuse ids, handles and model ids with a trailing newline', () => {
    const base = { protocol: PROTOCOL_VERSION, type: 'stub' };
    expect(errors('stub_request', { ...base, id: 'a\n', handle: 'h' })).not.toEqual([]);
    expect(errors('stub_request', { ...base, id: 'a', handle: 'h\n' })).not.toEqual([]);
    const explorer = { protocol: PROTOCOL_VERSION, id: 'a', type: 'explorer', model_id: 'm\n' };
    expect(errors('explorer_request', explorer)).not.toEqual([]);
    expect(errors('explorer_request', { ...explorer, model_id: 'm' })).toEqual([]);
  });

  it('the schemas refuse a request with both a handle and a key', () => {
    const both = { protocol: PROTOCOL_VERSION, id: 'a', type: 'delete', handle: 'h', key: 'k' };
    expect(errors('delete_request', both)).not.toEqual([]);
  });
});

describe('replies', () => {
  it('from the kernel validate and parse, for every type', () => {
    for (const type of TYPES) {
      const reply = messages[`${type}_reply`];
      expect(errors(`${type}_reply`, reply), type).toEqual([]);
      const parsed = parseReply(reply);
      expect(parsed?.ok).toBe(true);
      expect(parsed?.id).toBe(messages[`${type}_request`].id);
    }
  });

  it('list entries carry what the sidebar shows', () => {
    const result = messages.list_reply.result;
    expect(result.entries).toHaveLength(1);
    const entry = result.entries[0];
    expect(entry.handle).toBe(messages.stub.handle);
    expect(entry.source_tool).toBe('k8s_list_pods');
    expect(entry.ttl_left_s).toBe(3600 - 120);
    expect(result.notes[0].key).toBe('plan');
  });

  it('an error reply parses as an error', () => {
    const reply = parseReply(messages.error_reply);
    expect(errors('error_reply', messages.error_reply)).toEqual([]);
    expect(reply?.ok).toBe(false);
    if (reply && !reply.ok) {
      expect(reply.error.code).toBe('not_found');
    }
  });

  it('that are malformed or of another major are refused', () => {
    expect(parseReply(null)).toBeNull();
    expect(parseReply('ok')).toBeNull();
    expect(parseReply({ ...messages.list_reply, protocol: '2.0' })).toBeNull();
    expect(parseReply({ ...messages.list_reply, result: [] })).toBeNull();
    expect(parseReply({ ...messages.error_reply, error: { code: 1 } })).toBeNull();
    expect(parseReply({ ...messages.list_reply, id: 5 })).toBeNull();
  });
});

describe('stub payload', () => {
  it('from the kernel validates and parses', () => {
    expect(errors('stub', messages.stub)).toEqual([]);
    expect(parseStub(messages.stub)).toEqual(messages.stub);
  });

  it('says what is wrong with a payload that is not a stub', () => {
    expect(parseStub([])).toMatch(/not a JSON object/);
    expect(parseStub({ ...messages.stub, handle: 'A B' })).toMatch(/handle/);
    expect(parseStub({ ...messages.stub, size: '1 MB' })).toMatch(/size/);
    expect(parseStub({ ...messages.stub, format: 'xml' })).toMatch(/format/);
    expect(parseStub({ ...messages.stub, next: 'x' })).toMatch(/list/);
  });
});
