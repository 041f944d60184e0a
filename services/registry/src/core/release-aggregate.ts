import { ToolplaneError, type InFlightPolicy, type Release, type ReleaseRecord, type ReleaseState, type Scope } from '@toolplane/contracts';
import type { Decider } from '@toolplane/event-store';

// The Release aggregate: one per (workspace, releaseId). Published → Deprecated → Revoked (or Published → Revoked);
// Revoked is final. A release records the servers registered with it, so that its deprecation or revocation finds
// every descriptor of it in the record (server → bindings → descriptor versions), never in a read model that may lag.
// Repeating a change the release already made (the same state, the same in-flight policy) changes nothing: the
// caller then completes the retirement a crash may have interrupted.
//
//   Published --Deprecate--> Deprecated --Revoke--> Revoked
//   Published --Revoke-----> Revoked

/** The release and the servers registered with it (undefined release: never published). */
export interface ReleaseAggregate {
  readonly release: Release | undefined;
  readonly serverIds: readonly string[];
}

/** A command to the Release aggregate; `at` is now, from the injected clock. */
export type ReleaseCommand =
  | { readonly type: 'PublishRelease'; readonly scope: Scope; readonly releaseId: string; readonly by: string; readonly at: string }
  /** A server is about to be registered with the release: only a Published release takes one. */
  | { readonly type: 'RecordReleaseServer'; readonly releaseId: string; readonly serverId: string; readonly at: string }
  | { readonly type: 'DeprecateRelease'; readonly releaseId: string; readonly inFlight?: InFlightPolicy | undefined; readonly reason?: string | undefined; readonly at: string }
  | { readonly type: 'RevokeRelease'; readonly releaseId: string; readonly inFlight?: InFlightPolicy | undefined; readonly reason?: string | undefined; readonly at: string };

/** The in-flight policy a change applies when the operator names none: deprecation lets calls finish, revocation cancels those pending. */
export const defaultInFlight = { DeprecateRelease: 'FINISH', RevokeRelease: 'CANCEL_PENDING' } as const satisfies Record<'DeprecateRelease' | 'RevokeRelease', InFlightPolicy>;

/** The retirement reason a deprecation or revocation gives the release's descriptors. */
export function retirementReasonOf(state: Exclude<ReleaseState, 'Published'>): 'ReleaseDeprecated' | 'ReleaseRevoked' {
  return state === 'Deprecated' ? 'ReleaseDeprecated' : 'ReleaseRevoked';
}

function notFound(releaseId: string): ToolplaneError {
  return new ToolplaneError('NOT_FOUND', `no release ${releaseId} in this workspace: publish it first (toolplane releases publish ${releaseId})`);
}

function conflict(release: Release, wanted: string): ToolplaneError {
  return new ToolplaneError('CONFLICT', `release ${release.releaseId} is ${release.state}: it cannot be ${wanted}${release.state === 'Revoked' ? ' (revocation is final)' : ''}`, {
    details: { releaseId: release.releaseId, state: release.state },
  });
}

/** Decides what a command does to a release: the events, possibly none; throws a typed error to refuse. */
export function decideRelease(command: ReleaseCommand, state: ReleaseAggregate): ReleaseRecord[] {
  const { release } = state;
  if (command.type === 'PublishRelease') {
    if (release === undefined) {
      const published: Release = { tenant: command.scope.tenant, workspace: command.scope.workspace, releaseId: command.releaseId, state: 'Published', publishedBy: command.by, publishedAt: command.at, version: 1 };
      return [{ type: 'ReleasePublished', release: published }];
    }
    if (release.state === 'Published') return [];
    throw conflict(release, 'published again');
  }
  if (release === undefined) throw notFound(command.releaseId);
  switch (command.type) {
    case 'RecordReleaseServer':
      if (release.state !== 'Published') {
        throw new ToolplaneError('CONFLICT', `release ${release.releaseId} is ${release.state}: a server can be registered only with a Published release (publish a new one: toolplane releases publish ID)`, {
          details: { releaseId: release.releaseId, state: release.state },
        });
      }
      return state.serverIds.includes(command.serverId) ? [] : [{ type: 'ReleaseServerRecorded', releaseId: release.releaseId, serverId: command.serverId, at: command.at }];
    case 'DeprecateRelease':
    case 'RevokeRelease': {
      const target: ReleaseState = command.type === 'DeprecateRelease' ? 'Deprecated' : 'Revoked';
      const inFlight = command.inFlight ?? defaultInFlight[command.type];
      if (release.state === target) {
        // The same change again: nothing to record (the caller completes the retirement). Another policy is another change.
        if (release.inFlight === inFlight) return [];
        throw new ToolplaneError('CONFLICT', `release ${release.releaseId} is ${target} already, with in-flight policy ${release.inFlight ?? 'none'}, not ${inFlight}`, {
          details: { releaseId: release.releaseId, state: release.state },
        });
      }
      if (release.state === 'Revoked' || (target === 'Deprecated' && release.state !== 'Published')) throw conflict(release, target.toLowerCase());
      const change = { releaseId: release.releaseId, inFlight, ...(command.reason === undefined ? {} : { reason: command.reason }), at: command.at };
      return [command.type === 'DeprecateRelease' ? { type: 'ReleaseDeprecated', ...change } : { type: 'ReleaseRevoked', ...change }];
    }
  }
}

/** Applies one event to a release's state. */
export function evolveRelease(state: ReleaseAggregate, event: ReleaseRecord): ReleaseAggregate {
  if (event.type === 'ReleasePublished') return { release: event.release, serverIds: state.serverIds };
  const { release } = state;
  if (release === undefined) throw new ToolplaneError('INTERNAL', `${event.type} applied to a release that does not exist`);
  switch (event.type) {
    case 'ReleaseServerRecorded':
      return { release, serverIds: [...state.serverIds, event.serverId] };
    case 'ReleaseDeprecated':
    case 'ReleaseRevoked': {
      const { reason: _reason, ...rest } = release;
      const changed: Release = {
        ...rest,
        state: event.type === 'ReleaseDeprecated' ? 'Deprecated' : 'Revoked',
        inFlight: event.inFlight,
        ...(event.reason === undefined ? {} : { reason: event.reason }),
        ...(event.actor === undefined ? {} : { changedBy: event.actor }),
        changedAt: event.at,
      };
      return { release: changed, serverIds: state.serverIds };
    }
  }
}

/** The Release aggregate as a Decider. */
export const releaseDecider: Decider<ReleaseAggregate, ReleaseCommand, ReleaseRecord> = {
  decide: (command, state) => decideRelease(command, state),
  evolve: (state, event) => evolveRelease(state, event),
  initialState: () => ({ release: undefined, serverIds: [] }),
};
