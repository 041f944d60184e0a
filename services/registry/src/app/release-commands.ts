import {
  ToolplaneError,
  releaseStreamId,
  type ChangeReleaseReply,
  type ChangeReleaseRequest,
  type ListReleasesReply,
  type ListReleasesRequest,
  type PublishReleaseReply,
  type PublishReleaseRequest,
  type RegistryEvent,
  type Release,
  type ReleaseRecord,
  type Scope,
} from '@toolplane/contracts';
import { foldEvents, handleCommand } from '@toolplane/event-store';
import { releaseDecider, type ReleaseAggregate, type ReleaseCommand } from '../core/release-aggregate.js';
import { releaseLifecycleEvents } from '../core/wire-events.js';
import { recordedBy } from './aggregates.js';
import { retireDescriptorsOfRelease } from './descriptor-effects.js';
import type { Actor, RegistryContext } from './registry-context.js';

// Releases on the one write path: decide against the release's stream, append at the version read, publish what the
// append recorded (the publisher consumer publishes it again after a crash). A deprecation or revocation then retires
// the release's descriptors, each decided against its own stream; the same command again completes a retirement a
// crash interrupted, since the release change itself is then decided as nothing to do.

/** A release as its stream folds (release undefined: never published), with the stream's version. */
export interface LoadedRelease extends ReleaseAggregate {
  readonly version: number;
}

function releaseAt(aggregate: ReleaseAggregate, version: number): Release | undefined {
  return aggregate.release === undefined ? undefined : { ...aggregate.release, version };
}

/** Reads a release aggregate by its stream id. */
export async function readReleaseAt(context: RegistryContext, streamId: string, signal?: AbortSignal): Promise<LoadedRelease> {
  const stored = await context.stores.releases.readStream(streamId, signal ? { signal } : {});
  const aggregate = foldEvents(releaseDecider, stored.events);
  return { release: releaseAt(aggregate, stored.version), serverIds: aggregate.serverIds, version: stored.version };
}

/** Reads a release of the scope from the record. */
export async function readRelease(context: RegistryContext, scope: Scope, releaseId: string, signal?: AbortSignal): Promise<LoadedRelease> {
  return readReleaseAt(context, releaseStreamId(scope, releaseId), signal);
}

/** The lifecycle events of one release append stored at `seq`. */
export function releaseAppendEvents(release: Release, events: readonly ReleaseRecord[], seq: number): RegistryEvent[] {
  return releaseLifecycleEvents(events, release, { scope: release, aggregate: `release:${releaseStreamId(release, release.releaseId)}`, seq });
}

/** Decides a command on a release and appends it, then publishes its lifecycle events (a failure to publish is reported, not thrown). */
async function changeRelease(context: RegistryContext, scope: Scope, releaseId: string, command: ReleaseCommand, who: Actor, signal?: AbortSignal): Promise<{ release: Release; serverIds: readonly string[]; events: readonly ReleaseRecord[] }> {
  const handled = await handleCommand(context.stores.releases, recordedBy(releaseDecider, who.actor), releaseStreamId(scope, releaseId), command, signal ? { signal } : {});
  const release = releaseAt(handled.newState, handled.nextExpectedVersion);
  if (release === undefined) throw new ToolplaneError('INTERNAL', `release ${releaseId} has no state after a change`);
  if (handled.newEvents.length > 0) {
    try {
      await context.publishEvents(releaseAppendEvents(release, handled.newEvents, handled.nextExpectedVersion), signal);
    } catch (error) {
      context.onPublishError?.(error, `events of release ${releaseId}`);
    }
  }
  return { release, serverIds: handled.newState.serverIds, events: handled.newEvents };
}

/** Publishes a release (Published) for `actor`; a Published release again is returned as it is (`created` false). */
export async function publishRelease(context: RegistryContext, scope: Scope, request: PublishReleaseRequest, actor: string, signal?: AbortSignal): Promise<PublishReleaseReply> {
  const at = context.now();
  const changed = await changeRelease(context, scope, request.releaseId, { type: 'PublishRelease', scope, releaseId: request.releaseId, by: actor, at }, { actor, at }, signal);
  return { release: changed.release, created: changed.events.length > 0 };
}

async function endRelease(context: RegistryContext, scope: Scope, type: 'DeprecateRelease' | 'RevokeRelease', request: ChangeReleaseRequest, actor: string, signal?: AbortSignal): Promise<ChangeReleaseReply> {
  const who: Actor = { actor, at: context.now() };
  const command: ReleaseCommand = { type, releaseId: request.releaseId, inFlight: request.inFlight, reason: request.reason, at: who.at };
  const changed = await changeRelease(context, scope, request.releaseId, command, who, signal);
  // Also on a repeated command: descriptors a crash left active are retired now.
  const retiredDescriptors = await retireDescriptorsOfRelease(context, changed.release, changed.serverIds, who, signal);
  return { release: changed.release, retiredDescriptors };
}

/** Deprecates a Published release (default in-flight policy FINISH) and retires its descriptors. */
export function deprecateRelease(context: RegistryContext, scope: Scope, request: ChangeReleaseRequest, actor: string, signal?: AbortSignal): Promise<ChangeReleaseReply> {
  return endRelease(context, scope, 'DeprecateRelease', request, actor, signal);
}

/** Revokes a Published or Deprecated release for good (default in-flight policy CANCEL_PENDING) and retires its descriptors. */
export function revokeRelease(context: RegistryContext, scope: Scope, request: ChangeReleaseRequest, actor: string, signal?: AbortSignal): Promise<ChangeReleaseReply> {
  return endRelease(context, scope, 'RevokeRelease', request, actor, signal);
}

/** A release of the scope from the record; NOT_FOUND when it was never published. */
export async function getRelease(context: RegistryContext, scope: Scope, releaseId: string, signal?: AbortSignal): Promise<Release> {
  const { release } = await readRelease(context, scope, releaseId, signal);
  if (release === undefined) throw new ToolplaneError('NOT_FOUND', `no release ${releaseId} in ${scope.tenant}/${scope.workspace}`);
  return release;
}

/** A page of the scope's releases by id, folded from the record. */
export async function listReleases(context: RegistryContext, scope: Scope, request: ListReleasesRequest, signal?: AbortSignal): Promise<ListReleasesReply> {
  const byId = new Map<string, { aggregate: ReleaseAggregate; version: number }>();
  for (const append of await context.stores.releaseAppends(scope, signal)) {
    for (const event of append.events) {
      const current = byId.get(event.type === 'ReleasePublished' ? event.release.releaseId : event.releaseId) ?? { aggregate: releaseDecider.initialState(), version: 0 };
      const aggregate = releaseDecider.evolve(current.aggregate, event);
      if (aggregate.release !== undefined) byId.set(aggregate.release.releaseId, { aggregate, version: append.seq });
    }
  }
  const releases = [...byId.values()]
    .map(({ aggregate, version }) => releaseAt(aggregate, version))
    .filter((release): release is Release => release !== undefined && (request.state === undefined || release.state === request.state))
    .filter((release) => request.after === undefined || release.releaseId > request.after)
    .sort((a, b) => (a.releaseId < b.releaseId ? -1 : a.releaseId > b.releaseId ? 1 : 0));
  const page = releases.slice(0, request.limit);
  return { releases: page, next: releases.length > request.limit ? (page.at(-1)?.releaseId ?? null) : null };
}

/**
 * Refuses a registration or bind naming a release that is not Published, in one line that says what to do. A
 * release that does not exist is NOT_FOUND; one deprecated or revoked is CONFLICT.
 */
export async function assertReleasePublished(context: RegistryContext, scope: Scope, releaseId: string, what: string, signal?: AbortSignal): Promise<void> {
  const { release } = await readRelease(context, scope, releaseId, signal);
  if (release === undefined) {
    throw new ToolplaneError('NOT_FOUND', `the release ${JSON.stringify(releaseId)} does not exist in ${scope.tenant}/${scope.workspace}: publish it first (toolplane releases publish ${releaseId})`);
  }
  if (release.state !== 'Published') {
    throw new ToolplaneError('CONFLICT', `cannot ${what}: its release ${releaseId} is ${release.state}, not Published`, { details: { releaseId, state: release.state } });
  }
}

/** Records on the release a server about to be registered with it; CONFLICT when the release is no longer Published. */
export async function recordReleaseServer(context: RegistryContext, scope: Scope, releaseId: string, serverId: string, who: Actor, signal?: AbortSignal): Promise<void> {
  await changeRelease(context, scope, releaseId, { type: 'RecordReleaseServer', releaseId, serverId, at: who.at }, who, signal);
}
