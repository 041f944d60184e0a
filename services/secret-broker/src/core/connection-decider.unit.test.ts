import { describe, expect, it } from 'vitest';
import { ConnectionEvent, type CreateConnectionRequest, type EncryptedEnvelope } from '@toolplane/contracts';
import { foldEvents, handleCommand, inMemoryEventStore } from '@toolplane/event-store';
import { connectionDecider, decideConnection, type ConnectionAggregate, type ConnectionCommand } from './connection-decider.js';

const scope = { tenant: 'acme', workspace: 'main' };
const connectionId = '5b0d6f38-6f0e-4c43-8e36-2d9a1f0f9a11';
const policy = { allowHttpTokenEndpoints: false };
const at = (minute: number) => new Date(Date.UTC(2026, 10, 29, 17, minute));
const envelope = (kekId: string, tag = 'A'): EncryptedEnvelope => ({ v: 1, alg: 'A256GCM-KEK-A256GCM', kekId, wrappedKey: tag.repeat(80), iv: 'A'.repeat(16), ciphertext: `${tag}AAA`, tag: 'A'.repeat(22) });
const request: CreateConnectionRequest = { name: 'github', allowedTools: ['github.create_issue'], credential: { kind: 'bearer', token: 'tp-canary-first' }, actor: 'user:ops' };
const create: ConnectionCommand = { type: 'CreateConnection', scope, request, connectionId, now: at(0), policy, secret: envelope('k1') };
const rotate = (secretGeneration: number, secret: EncryptedEnvelope | undefined = envelope('k1', 'B')): ConnectionCommand => ({
  type: 'RotateConnection',
  request: { connectionRef: 'github', credential: { kind: 'bearer', token: 'tp-canary-second' }, actor: 'user:rotator' },
  now: at(1),
  policy,
  secretGeneration,
  secret,
});
const revoke: ConnectionCommand = { type: 'RevokeConnection', request: { connectionRef: 'github', reason: 'leaked', actor: 'user:revoker' }, now: at(2) };
const refusal = (work: () => unknown) => {
  try {
    work();
  } catch (error) {
    return error as { code: string; message: string };
  }
  throw new Error('expected a refusal');
};
/** Decides a sequence of commands, folding each decision in, as the command handler does. */
const run = (commands: readonly ConnectionCommand[]) => {
  const events: ConnectionEvent[] = [];
  for (const command of commands) events.push(...decideConnection(command, foldEvents(connectionDecider, events)));
  return events;
};

describe('the Connection decider', () => {
  it('creates a connection at version 1 with its encrypted credential; a second create of the name is CONFLICT', () => {
    const events = run([create]);
    expect(events.map((event) => event.type)).toEqual(['ConnectionCreated']);
    const state = foldEvents(connectionDecider, events);
    expect(state).toMatchObject({ connectionId, name: 'github', state: 'Active', secretGeneration: 1, version: 1, createdBy: 'user:ops', secret: { kekId: 'k1' } });
    expect(refusal(() => decideConnection(create, state)).code).toBe('CONFLICT');
    // Nothing secret in the clear: the events are the contract's, and hold the envelope only.
    expect(JSON.stringify(events)).not.toContain('tp-canary');
    for (const event of events) expect(ConnectionEvent.parse(event)).toEqual(event);
  });

  it('refuses a malformed create before anything else (INVALID_ARGUMENT), appending nothing', () => {
    const bad: ConnectionCommand = { ...create, request: { ...request, name: connectionId } };
    expect(refusal(() => decideConnection(bad, null)).code).toBe('INVALID_ARGUMENT');
  });

  it('rotates to the next generation with the new envelope, refuses another kind, and never rotates a revoked one', () => {
    const state = foldEvents(connectionDecider, run([create, rotate(2)]));
    expect(state).toMatchObject({ secretGeneration: 2, version: 2, rotatedBy: 'user:rotator', secret: { wrappedKey: 'B'.repeat(80) } });
    const otherKind: ConnectionCommand = { ...rotate(3), request: { connectionRef: 'github', credential: { kind: 'api-key', apiKey: 'x' } } } as ConnectionCommand;
    expect(refusal(() => decideConnection(otherKind, state)).code).toBe('INVALID_ARGUMENT');
    expect(refusal(() => decideConnection(rotate(2), state)).code).toBe('INTERNAL');
    const revoked = foldEvents(connectionDecider, run([create, revoke]));
    expect(refusal(() => decideConnection(rotate(2), revoked)).code).toBe('CONFLICT');
    expect(refusal(() => decideConnection(rotate(1, undefined), null)).code).toBe('NOT_FOUND');
  });

  it('revokes once: the secret is gone from the state and from the event; revoking again decides nothing', () => {
    const events = run([create, revoke]);
    const state = foldEvents(connectionDecider, events);
    expect(state).toMatchObject({ state: 'Revoked', revokedBy: 'user:revoker', revokeReason: 'leaked', version: 2 });
    expect(state).not.toHaveProperty('secret');
    expect(events.at(-1)?.data.connection).not.toHaveProperty('secret');
    expect(decideConnection(revoke, state)).toEqual([]);
    expect(refusal(() => decideConnection(revoke, null)).code).toBe('NOT_FOUND');
  });

  it('rewraps an active secret under another KEK once, and nothing for a revoked or current one', () => {
    const active = foldEvents(connectionDecider, run([create]));
    const rewrap: ConnectionCommand = { type: 'RewrapSecret', secret: envelope('k2'), now: at(3) };
    const rewrapped = foldEvents(connectionDecider, run([create, rewrap]));
    expect(rewrapped).toMatchObject({ version: 2, secret: { kekId: 'k2' }, secretGeneration: 1 });
    expect(decideConnection(rewrap, rewrapped)).toEqual([]);
    expect(decideConnection({ ...rewrap, secret: undefined }, active)).toEqual([]);
    expect(decideConnection(rewrap, foldEvents(connectionDecider, run([create, revoke])))).toEqual([]);
  });

  it('replaying the stored events gives the state the handler returned; a refused command appends nothing', async () => {
    const store = inMemoryEventStore<ConnectionEvent>();
    await handleCommand(store, connectionDecider, 'c', create);
    const rotated = await handleCommand(store, connectionDecider, 'c', rotate(2));
    await expect(handleCommand(store, connectionDecider, 'c', create)).rejects.toMatchObject({ code: 'CONFLICT' });
    const stored = await store.readStream('c');
    expect(stored.events).toHaveLength(2);
    expect(foldEvents(connectionDecider, stored.events)).toEqual(rotated.newState satisfies ConnectionAggregate);
  });
});
