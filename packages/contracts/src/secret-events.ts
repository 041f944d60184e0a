import { z } from 'zod';
import { ToolFailure } from './errors.js';
import { EventMetadata, defineEvent } from './event-metadata.js';
import { ConnectionRef, InvocationId, IsoDateTime, PrincipalId, ToolId, Uuid } from './primitives.js';

// Secret events say who got which connection's credential for what and until when. They never carry a secret
// value, nor anything derived from one (no hash, no length): the schemas have no field that could hold it.

/** The broker leased a connection's credential to a service for one invocation. */
export const SecretLeased = defineEvent(
  'SecretLeased',
  EventMetadata,
  z.strictObject({
    leaseId: Uuid,
    connectionRef: ConnectionRef,
    invocationId: InvocationId,
    toolId: ToolId,
    /** The service identity the sealed secret was released to. */
    leasedTo: PrincipalId,
    expiresAt: IsoDateTime,
  }),
  "A connection's credential was leased for one invocation (the value is never in the event).",
);
export type SecretLeased = z.infer<typeof SecretLeased>;

/** The broker refused a lease (scope, allow-list, revoked or unknown connection). */
export const SecretLeaseDenied = defineEvent(
  'SecretLeaseDenied',
  EventMetadata,
  z.strictObject({ connectionRef: ConnectionRef, invocationId: InvocationId, toolId: ToolId, failure: ToolFailure }),
  'A lease request was refused.',
);
export type SecretLeaseDenied = z.infer<typeof SecretLeaseDenied>;
