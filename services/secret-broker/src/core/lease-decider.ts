import type { LeaseEvent, SecretLease } from '@toolplane/contracts';
import type { Decider } from '@toolplane/event-store';
import { checkExistingLease, decideLease, leaseExpiry, newLease, type LeaseFacts } from './lease-rules.js';

// The lease aggregate: one per (invocation, connection), its id derived from them, so a repeated request finds the
// lease it was given and two replicas racing on one invocation append one LeaseGranted (the loser decides again and
// finds it). The facts about the connection are read from the connection's own subject before deciding.

/** A lease, or null before one was granted. */
export interface LeaseAggregate {
  readonly lease: SecretLease | null;
}

/** What may be asked of a lease. */
export type LeaseCommand =
  | {
      readonly type: 'GrantLease';
      readonly facts: LeaseFacts;
      readonly leaseId: string;
      /** The connection's version the facts were read at. */
      readonly connectionVersion: number;
      /** When the access token the lease carries expires (oauth2): the lease ends no later. */
      readonly tokenExpiresAt?: Date;
    }
  | { readonly type: 'ExpireLease'; readonly now: Date }
  | { readonly type: 'WithdrawLease'; readonly now: Date };

/**
 * Decides a command on a lease. A grant follows decideLease (refusals throw) and, when the invocation already holds
 * the lease, checkExistingLease: the same lease again (no event) or CONFLICT. Expiry ends an active lease whose time
 * is up; withdrawal ends an active lease whose connection changed while it was granted.
 */
export function decideLeaseCommand(command: LeaseCommand, state: LeaseAggregate): LeaseEvent[] {
  const { lease } = state;
  switch (command.type) {
    case 'GrantLease': {
      const { facts } = command;
      const decision = decideLease(facts);
      if (!decision.granted) throw decision.error;
      if (lease !== null) {
        const problem = checkExistingLease(lease, facts.request, decision.connection, facts.now);
        if (problem !== undefined) throw problem;
        return [];
      }
      const granted = newLease({ scope: facts.scope, request: facts.request, connection: decision.connection }, { leaseId: command.leaseId, now: facts.now, expiresAt: leaseExpiry(decision.expiresAt, command.tokenExpiresAt), leasedTo: decision.leasedTo });
      return [{ type: 'LeaseGranted', data: { lease: granted, connectionVersion: command.connectionVersion } }];
    }
    case 'ExpireLease':
      if (lease?.state !== 'Active' || Date.parse(lease.expiresAt) > command.now.getTime()) return [];
      return [{ type: 'LeaseEnded', data: { leaseId: lease.leaseId, state: 'Expired', endedAt: command.now.toISOString() } }];
    case 'WithdrawLease':
      if (lease?.state !== 'Active') return [];
      return [{ type: 'LeaseEnded', data: { leaseId: lease.leaseId, state: 'Revoked', endedAt: command.now.toISOString() } }];
  }
}

/** The lease after an event. */
export function evolveLease(state: LeaseAggregate, event: LeaseEvent): LeaseAggregate {
  switch (event.type) {
    case 'LeaseGranted':
      return { lease: event.data.lease };
    case 'LeaseEnded':
      return state.lease === null ? state : { lease: { ...state.lease, state: event.data.state, endedAt: event.data.endedAt, version: state.lease.version + 1 } };
  }
}

/** The lease aggregate on the one write path. */
export const leaseDecider: Decider<LeaseAggregate, LeaseCommand, LeaseEvent> = {
  decide: decideLeaseCommand,
  evolve: evolveLease,
  initialState: () => ({ lease: null }),
};
