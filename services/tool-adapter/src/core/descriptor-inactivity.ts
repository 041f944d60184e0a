import type { ToolDescriptor } from '@toolplane/contracts';

// Why a descriptor is not usable, said the same way wherever a call or a tool listing is refused, and whether a
// call accepted before its release was deprecated or revoked may still go on (the release's in-flight policy).

type Described = Pick<ToolDescriptor, 'toolId' | 'toolVersion' | 'active' | 'inactiveReason' | 'releaseId' | 'inFlight' | 'retiredAt'>;

const releaseVerb = { ReleaseDeprecated: 'deprecated', ReleaseRevoked: 'revoked' } as const;

/** Why the release (if a release did) retired the descriptor: `ReleaseRevoked: release r1 was revoked`; undefined otherwise. */
export function releaseRetirement(descriptor: Described): string | undefined {
  const reason = descriptor.inactiveReason;
  if (descriptor.active || (reason !== 'ReleaseDeprecated' && reason !== 'ReleaseRevoked')) return undefined;
  return `${reason}: release ${descriptor.releaseId ?? '(unknown)'} was ${releaseVerb[reason]}`;
}

/** `x@2 is not active (ReleaseRevoked: release r1 was revoked)`, or with the plain reason, or none. */
export function inactiveMessage(descriptor: Described): string {
  const why = releaseRetirement(descriptor) ?? descriptor.inactiveReason;
  return `${descriptor.toolId}@${descriptor.toolVersion} is not active${why === undefined ? '' : ` (${why})`}`;
}

/** Whether an accepted call of this descriptor that is not executing yet must end: its release was retired with CANCEL_PENDING. */
export function cancelledByRelease(descriptor: Described | undefined): boolean {
  return descriptor !== undefined && releaseRetirement(descriptor) !== undefined && descriptor.inFlight === 'CANCEL_PENDING';
}

/**
 * Whether a call received at `receivedAt` was accepted before a release retired its descriptor: such a call goes by
 * the release's in-flight policy, also when it is resumed from its record (a replica lost before it executed) and
 * resolves its tool again; any later one is refused.
 */
export function receivedBeforeRelease(descriptor: Described, receivedAt: string): boolean {
  if (releaseRetirement(descriptor) === undefined || descriptor.retiredAt === undefined) return false;
  return Date.parse(receivedAt) < Date.parse(descriptor.retiredAt);
}
