import { ConnectionEvent, LeaseEvent, ToolplaneError, connectionSubject, leaseSubject, secretBrokerStream, type Scope } from '@toolplane/contracts';
import { jetStreamEventStore, type EventStore } from '@toolplane/event-store';
import type { Messaging } from '@toolplane/messaging';

// The broker's aggregates on its private stream. A stream id is `{tenant}/{workspace}/{id}`: the subject is in the
// scope it names, so an id of another tenant or workspace reads as a connection that does not exist.

/** The stream id of an aggregate of a scope. */
export function streamIdOf(scope: Scope, id: string): string {
  return `${scope.tenant}/${scope.workspace}/${id}`;
}

function parseStreamId(streamId: string): { scope: Scope; id: string } {
  const [tenant, workspace, id, ...rest] = streamId.split('/');
  if (tenant === undefined || workspace === undefined || id === undefined || rest.length > 0) throw new ToolplaneError('INTERNAL', `not a secret-broker stream id: ${streamId}`);
  return { scope: { tenant, workspace }, id };
}

/** Connections, one subject each. */
export function connectionEventStore(m: Messaging): EventStore<ConnectionEvent> {
  return jetStreamEventStore(m, {
    stream: secretBrokerStream.name,
    subjectOf: (streamId) => {
      const { scope, id } = parseStreamId(streamId);
      return connectionSubject(scope, id);
    },
    schema: ConnectionEvent,
  });
}

/** Leases, one subject each. */
export function leaseEventStore(m: Messaging): EventStore<LeaseEvent> {
  return jetStreamEventStore(m, {
    stream: secretBrokerStream.name,
    subjectOf: (streamId) => {
      const { scope, id } = parseStreamId(streamId);
      return leaseSubject(scope, id);
    },
    schema: LeaseEvent,
    // On the lease path: the decider builds lease events from validated values (they are validated again on read), and
    // an append's id needs no hash: at one version of a lease only one decision of each kind can be made, and two
    // replicas' grants at version 0 are the same decision (the copy JetStream drops reads as a lost race).
    trustAppends: true,
    msgIdOf: (streamId, expectedVersion, events) => `lease/${streamId}/${expectedVersion}/${events.map((event) => (event.type === 'LeaseEnded' ? event.data.state : event.type)).join(',')}`,
  });
}
