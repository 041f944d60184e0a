import { describe, expect, it } from 'vitest';
import type { ReleaseRecord } from '@toolplane/contracts';
import { foldEvents } from '@toolplane/event-store';
import { decideRelease, releaseDecider, type ReleaseAggregate, type ReleaseCommand } from './release-aggregate.js';

const scope = { tenant: 'acme', workspace: 'dev' };
const at = '2026-03-01T12:00:00.000Z';
const releaseId = 'payments-2026.03';
const serverId = '0b9f6a3e-2f4c-4b7a-9c1d-5e6f7a8b9c00';

const publish: ReleaseCommand = { type: 'PublishRelease', scope, releaseId, by: 'user:op@example.com', at };
const deprecate = (inFlight?: 'FINISH' | 'CANCEL_PENDING'): ReleaseCommand => ({ type: 'DeprecateRelease', releaseId, inFlight, reason: 'superseded', at });
const revoke = (inFlight?: 'FINISH' | 'CANCEL_PENDING'): ReleaseCommand => ({ type: 'RevokeRelease', releaseId, inFlight, at });
const recordServer: ReleaseCommand = { type: 'RecordReleaseServer', releaseId, serverId, at };

/** The state after deciding and applying each command in turn. */
function after(...commands: ReleaseCommand[]): ReleaseAggregate {
  let events: ReleaseRecord[] = [];
  for (const command of commands) events = [...events, ...decideRelease(command, foldEvents(releaseDecider, events))];
  return foldEvents(releaseDecider, events);
}

describe('the Release aggregate', () => {
  it('publishes a new release (Published), and publishing it again while Published records nothing', () => {
    const events = decideRelease(publish, releaseDecider.initialState());
    expect(events).toEqual([{ type: 'ReleasePublished', release: { tenant: 'acme', workspace: 'dev', releaseId, state: 'Published', publishedBy: 'user:op@example.com', publishedAt: at, version: 1 } }]);
    expect(decideRelease(publish, after(publish))).toEqual([]);
  });

  it('deprecates a Published release, letting calls in flight finish unless told otherwise', () => {
    expect(decideRelease(deprecate(), after(publish))).toEqual([{ type: 'ReleaseDeprecated', releaseId, inFlight: 'FINISH', reason: 'superseded', at }]);
    expect(after(publish, deprecate('CANCEL_PENDING')).release).toMatchObject({ state: 'Deprecated', inFlight: 'CANCEL_PENDING', reason: 'superseded', changedAt: at });
  });

  it('revokes a Published or Deprecated release, cancelling pending calls unless told otherwise', () => {
    expect(decideRelease(revoke(), after(publish))).toEqual([{ type: 'ReleaseRevoked', releaseId, inFlight: 'CANCEL_PENDING', at }]);
    const revoked = after(publish, deprecate(), revoke('FINISH')).release;
    expect(revoked).toMatchObject({ state: 'Revoked', inFlight: 'FINISH' });
    // A revocation without a reason does not keep the deprecation's.
    expect(revoked).not.toHaveProperty('reason');
  });

  it('treats the same change again as done (no events), and the same change with another in-flight policy as a conflict', () => {
    expect(decideRelease(deprecate(), after(publish, deprecate()))).toEqual([]);
    expect(decideRelease(deprecate('FINISH'), after(publish, deprecate()))).toEqual([]);
    expect(decideRelease(revoke(), after(publish, revoke()))).toEqual([]);
    expect(() => decideRelease(deprecate('CANCEL_PENDING'), after(publish, deprecate()))).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
    expect(() => decideRelease(revoke('FINISH'), after(publish, revoke()))).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
  });

  it('keeps Revoked final: no deprecation, no new publication', () => {
    const revoked = after(publish, revoke());
    expect(() => decideRelease(deprecate(), revoked)).toThrow(expect.objectContaining({ code: 'CONFLICT', message: `release ${releaseId} is Revoked: it cannot be deprecated (revocation is final)` }));
    expect(() => decideRelease(publish, revoked)).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
  });

  it('refuses to publish a Deprecated release again', () => {
    expect(() => decideRelease(publish, after(publish, deprecate()))).toThrow(expect.objectContaining({ code: 'CONFLICT', message: `release ${releaseId} is Deprecated: it cannot be published again` }));
  });

  it('refuses every change of a release that was never published (NOT_FOUND, saying to publish it)', () => {
    for (const command of [deprecate(), revoke(), recordServer]) {
      expect(() => decideRelease(command, releaseDecider.initialState())).toThrow(expect.objectContaining({ code: 'NOT_FOUND', message: `no release ${releaseId} in this workspace: publish it first (toolplane releases publish ${releaseId})` }));
    }
  });

  it('records each server registered with a Published release once, and refuses servers once it is deprecated or revoked', () => {
    const recorded = after(publish, recordServer, recordServer);
    expect(recorded.serverIds).toEqual([serverId]);
    expect(decideRelease(recordServer, recorded)).toEqual([]);
    expect(after(publish, recordServer, deprecate()).serverIds).toEqual([serverId]);
    expect(() => decideRelease(recordServer, after(publish, deprecate()))).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
    expect(() => decideRelease(recordServer, after(publish, revoke()))).toThrow(expect.objectContaining({ code: 'CONFLICT' }));
  });

  it('records who changed it from the event’s actor', () => {
    const events = [...decideRelease(publish, releaseDecider.initialState())];
    const deprecated = decideRelease(deprecate(), foldEvents(releaseDecider, events)).map((event) => ({ ...event, actor: 'user:rel@example.com' }));
    expect(foldEvents(releaseDecider, [...events, ...deprecated]).release).toMatchObject({ changedBy: 'user:rel@example.com', publishedBy: 'user:op@example.com' });
  });
});
