import { describe, expect, it } from 'vitest';
import { scope } from '../test/fixtures.js';
import { MAX_MESSAGE_BYTES, MAX_REQUEST_BYTES } from './limits.js';
import { type StreamDefinition, streams } from './streams.js';
import { commandFilter, deadLetterSubject, eventSubject, invocationReplySubject, invocationRequestSubject, subjectFiltersOverlap } from './subjects.js';

const all: StreamDefinition[] = Object.values(streams);

describe('stream definitions', () => {
  it('have distinct names and subjects that never overlap one another', () => {
    expect(new Set(all.map((stream) => stream.name)).size).toBe(all.length);
    const subjects = all.flatMap((stream) => stream.subjects.map((subject) => ({ stream: stream.name, subject })));
    for (const [i, a] of subjects.entries()) {
      for (const b of subjects.slice(i + 1)) {
        expect(subjectFiltersOverlap(a.subject, b.subject), `${a.stream} ${a.subject} vs ${b.stream} ${b.subject}`).toBe(false);
      }
    }
  });

  it('capture their own subjects, and no command or reply subject', () => {
    const captures = (stream: StreamDefinition, subject: string) => stream.subjects.some((filter) => subjectFiltersOverlap(filter, subject));
    expect(captures(streams.invocations, invocationRequestSubject(scope))).toBe(true);
    expect(captures(streams.events, eventSubject(scope, 'ToolCallStarted'))).toBe(true);
    expect(captures(streams.events, eventSubject(scope, 'SecretLeaseDenied'))).toBe(true);
    expect(captures(streams.deadLetters, deadLetterSubject(streams.events.name, 'audit-projector'))).toBe(true);
    for (const stream of all) {
      // A stream that captured request/reply subjects would answer requests with PubAcks.
      expect(captures(stream, commandFilter('adapter'))).toBe(false);
      expect(captures(stream, invocationReplySubject(scope, 'inbox'))).toBe(false);
    }
  });

  it('use work-queue retention for requests and keep events and dead letters by limits', () => {
    expect(streams.invocations.retention).toBe('workqueue');
    expect(streams.events.retention).toBe('limits');
    expect(streams.deadLetters.retention).toBe('limits');
    for (const stream of all) {
      expect(stream.storage).toBe('file');
      expect(stream.duplicateWindowMs).toBeGreaterThan(0);
      expect(stream.maxMsgSize).toBe(MAX_MESSAGE_BYTES);
    }
  });

  it('leave room for headers beside the largest request body', () => {
    expect(MAX_REQUEST_BYTES).toBeLessThan(streams.invocations.maxMsgSize);
  });
});
