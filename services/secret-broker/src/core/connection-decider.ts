import { ToolplaneError, type Connection, type ConnectionEvent, type CreateConnectionRequest, type EncryptedEnvelope, type RevokeConnectionRequest, type RotateConnectionRequest, type Scope } from '@toolplane/contracts';
import type { Decider } from '@toolplane/event-store';
import { planNewConnection, planRevocation, planRotation, type ConnectionPolicy } from './connection-rules.js';

// The Connection aggregate. Its state is the connection as its last event left it (every event carries the whole
// connection: see ConnectionEvent), or null before it was created. The credential arrives already encrypted (sealing
// draws a random data key, so it happens before deciding); the rules of connection-rules.ts decide the rest.

/** A connection, or null when none was created under the id. */
export type ConnectionAggregate = Connection | null;

/** What may be asked of a connection. */
export type ConnectionCommand =
  | {
      readonly type: 'CreateConnection';
      readonly scope: Scope;
      readonly request: CreateConnectionRequest;
      readonly connectionId: string;
      readonly now: Date;
      readonly policy: ConnectionPolicy;
      /** The credential, encrypted for generation 1 of this connection. */
      readonly secret: EncryptedEnvelope;
    }
  | {
      readonly type: 'RotateConnection';
      readonly request: RotateConnectionRequest;
      readonly now: Date;
      readonly policy: ConnectionPolicy;
      /** The new credential, encrypted for `secretGeneration` (undefined when there is no connection to encrypt it for). */
      readonly secret: EncryptedEnvelope | undefined;
      readonly secretGeneration: number;
    }
  | { readonly type: 'RevokeConnection'; readonly request: RevokeConnectionRequest; readonly now: Date }
  /** `secret`: the stored one rewrapped under the current KEK, undefined when it already is (or there is none). */
  | { readonly type: 'RewrapSecret'; readonly secret: EncryptedEnvelope | undefined; readonly now: Date };

const notFound = (ref: string) => new ToolplaneError('NOT_FOUND', `no connection ${ref} in this workspace`);

/** Decides a command on a connection (pure: throws a taxonomy error to refuse, returns no events to do nothing). */
export function decideConnection(command: ConnectionCommand, state: ConnectionAggregate): ConnectionEvent[] {
  switch (command.type) {
    case 'CreateConnection': {
      const plan = planNewConnection(command.scope, command.request, { connectionId: command.connectionId, now: command.now }, command.policy);
      if (state !== null) throw new ToolplaneError('CONFLICT', `a connection named ${plan.name} already exists in this workspace`);
      return [{ type: 'ConnectionCreated', data: { connection: { ...plan, secret: command.secret } } }];
    }
    case 'RotateConnection': {
      if (state === null) throw notFound(command.request.connectionRef);
      const plan = planRotation(state, command.request, command.now, command.policy);
      if (command.secret === undefined || plan.secretGeneration !== command.secretGeneration) throw new ToolplaneError('INTERNAL', `the new credential of connection ${state.name} was encrypted for another generation`);
      return [{ type: 'ConnectionRotated', data: { connection: { ...state, ...plan, secret: command.secret, version: state.version + 1 } } }];
    }
    case 'RevokeConnection': {
      if (state === null) throw notFound(command.request.connectionRef);
      const plan = planRevocation(state, command.request, command.now);
      if (plan === undefined) return [];
      const { secret: _deleted, ...kept } = state;
      return [{ type: 'ConnectionRevoked', data: { connection: { ...kept, ...plan, version: state.version + 1 } } }];
    }
    case 'RewrapSecret': {
      if (command.secret === undefined || state?.state !== 'Active' || state.secret === undefined || state.secret.kekId === command.secret.kekId) return [];
      return [{ type: 'ConnectionSecretRewrapped', data: { connection: { ...state, secret: command.secret, updatedAt: command.now.toISOString(), version: state.version + 1 } } }];
    }
  }
}

/** The connection after an event: the one the event carries. */
export function evolveConnection(_state: ConnectionAggregate, event: ConnectionEvent): ConnectionAggregate {
  return event.data.connection;
}

/** The Connection aggregate on the one write path. */
export const connectionDecider: Decider<ConnectionAggregate, ConnectionCommand, ConnectionEvent> = {
  decide: decideConnection,
  evolve: evolveConnection,
  initialState: () => null,
};
