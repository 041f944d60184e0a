import type { LifecycleEvent } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { eventMatches, eventSubjects } from './event-stream.js';

const scope = { tenant: 'acme', workspace: 'main' };

describe('eventSubjects', () => {
  it('narrows the server-side filter to the scope, then to types or a family', () => {
    expect(eventSubjects(scope, {})).toEqual(['tp.v1.evt.acme.main.*.*']);
    expect(eventSubjects(scope, { family: 'approval' })).toEqual(['tp.v1.evt.acme.main.approval.*']);
    expect(eventSubjects(scope, { types: ['ToolCallStarted', 'ToolCallCompleted', 'ToolCallStarted'], family: 'approval' })).toEqual([
      'tp.v1.evt.acme.main.invocation.ToolCallStarted',
      'tp.v1.evt.acme.main.invocation.ToolCallCompleted',
    ]);
  });
});

describe('eventMatches', () => {
  const event = { type: 'ToolCallStarted', metadata: { toolCallId: 'tc-1', invocationId: 'i-1', correlationId: 'run-1' } } as unknown as LifecycleEvent;
  it('matches on every metadata condition given', () => {
    expect(eventMatches(event, {})).toBe(true);
    expect(eventMatches(event, { toolCallId: 'tc-1', correlationId: 'run-1', invocationId: 'i-1' })).toBe(true);
    expect(eventMatches(event, { toolCallId: 'tc-2' })).toBe(false);
    expect(eventMatches(event, { correlationId: 'run-2' })).toBe(false);
    expect(eventMatches({ type: 'ApprovalGranted', metadata: {} } as unknown as LifecycleEvent, { toolCallId: 'tc-1' })).toBe(false);
  });
});
