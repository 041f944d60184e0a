import { z } from 'zod';
import { ExternalId, IsoDateTime, PrincipalId, TenantId, WorkspaceId, boundedText } from './primitives.js';
import { InFlightPolicy } from './registry-events.js';

/** Where a release stands: Published (usable), Deprecated (retired, may still be revoked), Revoked (final). */
export const ReleaseState = z.enum(['Published', 'Deprecated', 'Revoked']);
export type ReleaseState = z.infer<typeof ReleaseState>;

/**
 * A published asset release of a workspace (BC-04), keyed by its id: servers are registered with it, and their tools
 * are usable only while it is Published. Deprecating or revoking it retires them with its in-flight policy.
 */
export const Release = z.object({
  tenant: TenantId,
  workspace: WorkspaceId,
  releaseId: ExternalId,
  state: ReleaseState,
  /** The in-flight policy of the last deprecation or revocation. */
  inFlight: InFlightPolicy.optional(),
  /** Why it was deprecated or revoked. */
  reason: boundedText(1024).optional(),
  publishedBy: PrincipalId,
  publishedAt: IsoDateTime,
  /** Who deprecated or revoked it, and when. */
  changedBy: PrincipalId.optional(),
  changedAt: IsoDateTime.optional(),
  /** The stream version of the release aggregate. */
  version: z.number().int().positive(),
});
export type Release = z.infer<typeof Release>;
