import { describe, expect, it } from 'vitest';
import { mcpMetaKeys } from '@toolplane/contracts';
import { methodLabel, outcomeOfResponse, rpcMessagesOf } from './request-outcome.js';

describe('labelling JSON-RPC messages for the request counter', () => {
  it('names the methods of the closed list and folds every other into other', () => {
    expect(methodLabel('tools/call')).toBe('tools/call');
    expect(methodLabel('notifications/initialized')).toBe('notifications/initialized');
    expect(methodLabel('resources/read')).toBe('resources/read');
    expect(methodLabel('server/discover')).toBe('server/discover');
    expect(methodLabel('subscriptions/listen')).toBe('subscriptions/listen');
    expect(methodLabel('completion/complete')).toBe('completion/complete');
    expect(methodLabel('logging/setLevel')).toBe('other');
    expect(methodLabel('tools/call\u0000x')).toBe('other');
    expect(methodLabel(42)).toBe('other');
  });

  it('splits a body into requests by id and notifications, ignoring responses and garbage', () => {
    const { requests, notifications } = rpcMessagesOf([
      { jsonrpc: '2.0', id: 1, method: 'tools/list' },
      { jsonrpc: '2.0', id: 'b', method: 'sampling/whatever' },
      { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } },
      { jsonrpc: '2.0', id: 2, result: {} },
      'nonsense',
      null,
    ]);
    expect([...requests]).toEqual([
      [1, 'tools/list'],
      ['b', 'other'],
    ]);
    expect(notifications).toEqual(['notifications/cancelled']);
    expect([...rpcMessagesOf({ jsonrpc: '2.0', id: 0, method: 'ping' }).requests]).toEqual([[0, 'ping']]);
  });

  it('counts 2026-07-28’s header, capability and revision refusals as INVALID_ARGUMENT', () => {
    for (const code of [-32020, -32021, -32022]) expect(outcomeOfResponse({ jsonrpc: '2.0', id: 1, error: { code, message: 'refused' } })).toEqual({ id: 1, outcome: 'INVALID_ARGUMENT' });
  });

  it('takes a response’s outcome from its result, its tool error’s code, or its JSON-RPC error', () => {
    expect(outcomeOfResponse({ jsonrpc: '2.0', id: 1, result: { tools: [] } })).toEqual({ id: 1, outcome: 'ok' });
    expect(outcomeOfResponse({ jsonrpc: '2.0', id: 2, result: { content: [], isError: true, _meta: { [mcpMetaKeys.error]: { code: 'APPROVAL_PENDING' } } } })).toEqual({ id: 2, outcome: 'APPROVAL_PENDING' });
    expect(outcomeOfResponse({ jsonrpc: '2.0', id: 3, result: { content: [], isError: true } })).toEqual({ id: 3, outcome: 'INTERNAL' });
    expect(outcomeOfResponse({ jsonrpc: '2.0', id: 4, error: { code: -32603, message: 'TIMEOUT: …', data: { code: 'TIMEOUT' } } })).toEqual({ id: 4, outcome: 'TIMEOUT' });
    expect(outcomeOfResponse({ jsonrpc: '2.0', id: 5, error: { code: -32601, message: 'Method not found' } })).toEqual({ id: 5, outcome: 'INVALID_ARGUMENT' });
    expect(outcomeOfResponse({ jsonrpc: '2.0', id: 6, error: { code: -32603, message: 'x', data: { code: 'NOT_A_CODE' } } })).toEqual({ id: 6, outcome: 'INTERNAL' });
    // A completion of a prompt the caller is not offered: invalid params, counted by the reason it carries.
    expect(outcomeOfResponse({ jsonrpc: '2.0', id: 7, error: { code: -32602, message: 'no prompt x.y is offered to this agent', data: { code: 'NOT_FOUND' } } })).toEqual({ id: 7, outcome: 'NOT_FOUND' });
    expect(outcomeOfResponse({ jsonrpc: '2.0', method: 'notifications/tools/list_changed' })).toBeUndefined();
    expect(outcomeOfResponse({ jsonrpc: '2.0', id: null, error: { code: -32700 } })).toBeUndefined();
  });
});
