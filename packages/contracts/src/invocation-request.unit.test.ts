import { describe, expect, it } from 'vitest';
import { request, scope } from '../test/fixtures.js';
import { InvocationRequest, invocationRequestMsgId } from './invocation-request.js';
import { MAX_JSON_DEPTH } from './limits.js';

const accepts = (value: unknown) => InvocationRequest.safeParse(value).success;

describe('InvocationRequest', () => {
  it('accepts a minimal request and one with every optional field', () => {
    expect(accepts(request)).toBe(true);
    expect(
      accepts({
        ...request,
        toolVersion: '1.2.0',
        idempotencyKey: undefined,
        durableExecutionId: 'run-42:step-3',
        agentRevision: '7',
        toolCallId: 'toolu_01A09q90qw90lq917835lq9',
        causationId: 'evt-1',
        flowRunId: 'fr-1',
        workItemId: 'wi-1',
        timeoutMs: 30_000,
        deadline: '2026-11-29T17:01:00.000Z',
        replyInbox: 'Qx7_abc',
      }),
    ).toBe(true);
  });

  it('cannot express a principal or any other unknown key: they make it invalid', () => {
    for (const extra of [{ principal: 'root' }, { scope: { tenant: 'other' } }, { agentId: 'root' }, { foo: 1 }]) {
      expect(accepts({ ...request, ...extra }), JSON.stringify(extra)).toBe(false);
    }
  });

  it('tolerates a tenant or workspace in the body, which never changes the message id (the subject decides)', () => {
    const parsed = InvocationRequest.parse({ ...request, tenant: 'other', workspace: 'elsewhere' });
    expect(invocationRequestMsgId(scope, parsed)).toBe(invocationRequestMsgId(scope, InvocationRequest.parse(request)));
  });

  it('carries a completion of a prompt or resource, its other arguments strings, in the message id', () => {
    const completing = { ...request, capability: 'prompt', arguments: { repo: 'toolplane' }, completion: { argument: { name: 'label', value: 'bu' } } };
    expect(accepts(completing)).toBe(true);
    expect(accepts({ ...completing, capability: 'resource' })).toBe(true);
    expect(accepts({ ...completing, completion: { argument: { name: 'label', value: '' } } })).toBe(true);
    for (const broken of [
      { capability: undefined },
      { capability: 'tool' },
      { arguments: { repo: 7 } },
      { completion: { argument: { name: '', value: 'x' } } },
      { completion: { argument: { name: 'label', value: 'x'.repeat(1025) } } },
      { completion: { argument: { name: 'label' } } },
      { completion: { argument: { name: 'label', value: 'x' }, context: {} } },
    ]) {
      expect(accepts({ ...completing, ...broken }), JSON.stringify(broken)).toBe(false);
    }
    const msgId = (value: string) => invocationRequestMsgId(scope, InvocationRequest.parse({ ...completing, completion: { argument: { name: 'label', value } } }));
    expect(msgId('bu')).not.toBe(msgId('bug'));
  });

  it('needs an idempotency key or both inputs to derive one', () => {
    const { idempotencyKey: _key, ...keyless } = request;
    expect(accepts(keyless)).toBe(false);
    expect(accepts({ ...keyless, durableExecutionId: 'run-1' })).toBe(false);
    expect(accepts({ ...keyless, agentRevision: '7' })).toBe(false);
    expect(accepts({ ...keyless, durableExecutionId: 'run-1', agentRevision: '7' })).toBe(true);
  });

  it.each([
    ['a tool id without namespace', { toolId: 'create_issue' }],
    ['a tool id with a wildcard', { toolId: 'github.*' }],
    ['a tool id with whitespace', { toolId: 'github.create issue' }],
    ['arguments that are an array', { arguments: [1, 2] }],
    ['arguments that are not an object', { arguments: 'x' }],
    ['non-finite numbers in arguments', { arguments: { n: Number.POSITIVE_INFINITY } }],
    ['an idempotency key with spaces', { idempotencyKey: 'a b' }],
    ['an oversize idempotency key', { idempotencyKey: 'k'.repeat(129) }],
    ['an oversize context token', { contextToken: `a.b.${'c'.repeat(16_384)}` }],
    ['a context token that is not a JWS', { contextToken: 'not a token' }],
    ['a zero timeout', { timeoutMs: 0 }],
    ['a timeout beyond the limit', { timeoutMs: 60 * 60 * 1000 }],
    ['a local-time deadline', { deadline: '2026-11-29T17:01:00' }],
    ['a reply inbox with a dot', { replyInbox: 'a.b' }],
    ['a missing correlation id', { correlationId: undefined }],
  ])('rejects %s', (_what, change) => {
    expect(accepts({ ...request, ...change })).toBe(false);
  });

  it('accepts arguments nested up to the bound and rejects deeper ones', () => {
    const nested = (levels: number): unknown => {
      let value: unknown = 1;
      for (let i = 0; i < levels; i++) value = { d: value };
      return value;
    };
    expect(accepts({ ...request, arguments: nested(MAX_JSON_DEPTH) })).toBe(true);
    expect(accepts({ ...request, arguments: nested(MAX_JSON_DEPTH + 1) })).toBe(false);
  });
});

describe('invocationRequestMsgId', () => {
  it('is the same for a re-sent request with a fresh token, deadline or reply inbox', () => {
    const again = { ...request, contextToken: 'eyJ.eyJ.new', deadline: '2026-11-29T18:00:00.000Z', replyInbox: 'other', arguments: { labels: ['bug'], title: 'Hi' } };
    expect(invocationRequestMsgId(scope, again)).toBe(invocationRequestMsgId(scope, request));
    expect(invocationRequestMsgId(scope, request)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('differs when scope, key, tool or arguments differ', () => {
    const id = invocationRequestMsgId(scope, request);
    expect(invocationRequestMsgId({ ...scope, workspace: 'other' }, request)).not.toBe(id);
    expect(invocationRequestMsgId(scope, { ...request, idempotencyKey: 'key-2' })).not.toBe(id);
    expect(invocationRequestMsgId(scope, { ...request, toolVersion: '2' })).not.toBe(id);
    expect(invocationRequestMsgId(scope, { ...request, arguments: { title: 'Ho', labels: ['bug'] } })).not.toBe(id);
  });
});
