import { describe, expect, it } from 'vitest';
import { sha256Hex } from './canonical-json.js';
import { invocationStateFilter, invocationStateStream, invocationStateSubject, toolCallIndexSubject } from './invocation-state.js';
import { streams } from './streams.js';
import { subjectFiltersOverlap } from './subjects.js';

describe('the tool adapter’s invocation state stream', () => {
  const scope = { tenant: 'acme', workspace: 'support' };
  const callId = sha256Hex('a call');

  it('captures the subjects of calls and ToolCallId index entries, with tenant and workspace as tokens', () => {
    const call = invocationStateSubject(scope, callId);
    const indexed = toolCallIndexSubject(scope, 'tc.with:odd@chars');
    expect(call).toBe(`tp.v1.ivs.acme.support.call.${callId}`);
    expect(indexed).toMatch(/^tp\.v1\.ivs\.acme\.support\.toolcall\.[0-9a-f]{64}$/);
    for (const subject of [call, indexed]) {
      expect(invocationStateStream.subjects.some((filter) => subjectFiltersOverlap(filter, subject))).toBe(true);
      expect(subjectFiltersOverlap(invocationStateFilter({ tenant: 'acme' }), subject)).toBe(true);
      expect(subjectFiltersOverlap(invocationStateFilter({ tenant: 'globex' }), subject)).toBe(false);
    }
  });

  it('overlaps no platform stream, and refuses tokens that are not safe', () => {
    for (const stream of Object.values(streams)) {
      for (const filter of stream.subjects) expect(invocationStateStream.subjects.some((own) => subjectFiltersOverlap(own, filter))).toBe(false);
    }
    expect(() => invocationStateSubject({ tenant: 'a.b', workspace: 'w' }, callId)).toThrow(/safe subject token/);
    expect(() => invocationStateSubject(scope, 'not-a-digest')).toThrow(/SHA-256/);
  });
});
