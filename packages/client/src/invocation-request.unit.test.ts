import { deriveIdempotencyKey, invocationRequestMsgId, MAX_INVOCATION_TIMEOUT_MS, MAX_REQUEST_BYTES } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { boundedTimeoutMs, prepareInvocation } from './invocation-request.js';

const token = 'eyJhbGciOiJFZERTQSJ9.eyJzdWIiOiJ4In0.c2ln';
let ids = 0;
const envelope = { contextToken: token, replyInbox: 'inbox_1', timeoutMs: 5_000, newId: () => `00000000-0000-4000-8000-${String((ids += 1)).padStart(12, '0')}` };

describe('prepareInvocation', () => {
  it('uses a given key as it is, and fills in the token, inbox, deadline and a correlation id', () => {
    const prepared = prepareInvocation('github.get_issue', { number: 7 }, { idempotencyKey: 'call-1', toolCallId: 'tc-1' }, envelope);
    expect(prepared.keySource).toBe('given');
    expect(prepared.idempotencyKey).toBe('call-1');
    expect(prepared.request).toMatchObject({ toolId: 'github.get_issue', arguments: { number: 7 }, idempotencyKey: 'call-1', toolCallId: 'tc-1', contextToken: token, replyInbox: 'inbox_1', timeoutMs: 5_000 });
    expect(prepared.request.correlationId).toMatch(/^00000000-/);
  });

  it('derives the key the adapter derives from the durable execution, and leaves the request keyless', () => {
    const options = { durableExecutionId: 'run-9/step-2', agentRevision: '7', correlationId: 'run-9' };
    const prepared = prepareInvocation('github.get_issue', { number: 7 }, options, envelope);
    expect(prepared.keySource).toBe('derived');
    expect(prepared.idempotencyKey).toBe(deriveIdempotencyKey({ durableExecutionId: 'run-9/step-2', agentRevision: '7', toolId: 'github.get_issue', arguments: { number: 7 } }));
    expect(prepared.request.idempotencyKey).toBeUndefined();
    // The same call prepared again (a replayed step) is the same message for JetStream's deduplication.
    const again = prepareInvocation('github.get_issue', { number: 7 }, options, { ...envelope, contextToken: `${token}x`, replyInbox: 'inbox_2' });
    expect(invocationRequestMsgId({ tenant: 't', workspace: 'w' }, again.request)).toBe(invocationRequestMsgId({ tenant: 't', workspace: 'w' }, prepared.request));
  });

  it('carries a completion: its partial value is part of the derived key and the message id, so two values are two calls', () => {
    const options = (value: string) => ({ durableExecutionId: 'run-9/step-2', agentRevision: '7', correlationId: 'run-9', capability: 'prompt' as const, completion: { argument: { name: 'label', value } } });
    const bu = prepareInvocation('github.triage', { repo: 'toolplane' }, options('bu'), envelope);
    const bug = prepareInvocation('github.triage', { repo: 'toolplane' }, options('bug'), envelope);
    expect(bu.request).toMatchObject({ capability: 'prompt', completion: { argument: { name: 'label', value: 'bu' } }, arguments: { repo: 'toolplane' } });
    expect(bu.idempotencyKey).not.toBe(bug.idempotencyKey);
    const scope = { tenant: 't', workspace: 'w' };
    expect(invocationRequestMsgId(scope, bu.request)).not.toBe(invocationRequestMsgId(scope, bug.request));
    // A completion names what it completes, and its arguments (those already chosen) are strings.
    expect(() => prepareInvocation('github.triage', {}, { idempotencyKey: 'k', completion: { argument: { name: 'label', value: '' } } }, envelope)).toThrow(/capability/);
    expect(() => prepareInvocation('github.triage', { n: 1 }, { ...options(''), idempotencyKey: 'k' }, envelope)).toThrow(/arguments\.n/);
  });

  it('generates a key when the caller gives neither a key nor derivation inputs, so the call can always be looked up', () => {
    const a = prepareInvocation('fixture.echo', { text: 'x' }, {}, envelope);
    const b = prepareInvocation('fixture.echo', { text: 'x' }, {}, envelope);
    expect(a.keySource).toBe('generated');
    expect(a.request.idempotencyKey).toBe(a.idempotencyKey);
    expect(a.idempotencyKey).not.toBe(b.idempotencyKey);
  });

  it('refuses a request over the contract’s size limit before it is sent, and takes one at the limit', () => {
    const sized = (text: string) => prepareInvocation('fixture.echo', { text }, { idempotencyKey: 'big-1', correlationId: 'c-1' }, envelope);
    const overhead = Buffer.byteLength(JSON.stringify(sized('').request));
    expect(Buffer.byteLength(JSON.stringify(sized('x'.repeat(MAX_REQUEST_BYTES - overhead)).request))).toBe(MAX_REQUEST_BYTES);
    const over = () => sized('x'.repeat(MAX_REQUEST_BYTES - overhead + 1));
    expect(over).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(over).toThrow(`over the limit of ${MAX_REQUEST_BYTES} bytes`);
    // Bytes, not characters: each é is two.
    expect(() => sized('é'.repeat(Math.ceil((MAX_REQUEST_BYTES - overhead + 1) / 2)))).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });

  it('refuses a durable execution without an agent revision, and a request breaking its contract, as INVALID_ARGUMENT', () => {
    expect(() => prepareInvocation('fixture.echo', {}, { durableExecutionId: 'run-1' }, envelope)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => prepareInvocation('not a tool id!', {}, { idempotencyKey: 'k' }, envelope)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => prepareInvocation('fixture.echo', {}, { idempotencyKey: 'k' }, { ...envelope, contextToken: 'not-a-jws' })).toThrow(/contextToken/);
  });
});

describe('boundedTimeoutMs', () => {
  it('rounds up, caps at the longest allowed, and refuses nonsense', () => {
    expect(boundedTimeoutMs(1.2)).toBe(2);
    expect(boundedTimeoutMs(MAX_INVOCATION_TIMEOUT_MS * 10)).toBe(MAX_INVOCATION_TIMEOUT_MS);
    expect(() => boundedTimeoutMs(0)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => boundedTimeoutMs(Number.NaN)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
