import { describe, expect, it } from 'vitest';
import { sampleEvents, scope } from '../test/fixtures.js';
import { hasErrorCode } from './errors.js';
import { EventFamily, eventTypesByFamily } from './lifecycle-event.js';
import {
  commandFilter,
  commandSubject,
  deadLetterFilter,
  deadLetterSubject,
  eventFilter,
  eventSubject,
  invocationReplySubject,
  invocationRequestFilter,
  invocationRequestSubject,
  parseSubject,
  scopeOfSubject,
  subjectFiltersOverlap,
  subjectOfEvent,
} from './subjects.js';

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (hasErrorCode(error)) return error.code;
    throw error;
  }
  throw new Error('expected a refusal');
}

const badTokens = ['', 'a.b', '*', '>', 'a*', 'a>', 'a b', ' a', 'a\tb', 'a\nb', 'é', 'x'.repeat(65)];

describe('subject builders', () => {
  it('follow the v1 scheme', () => {
    expect(invocationRequestSubject(scope)).toBe('tp.v1.inv.acme.main.request');
    expect(invocationReplySubject(scope, 'inbox_1')).toBe('tp.v1.rpl.acme.main.inbox_1');
    expect(eventSubject(scope, 'ToolCallStarted')).toBe('tp.v1.evt.acme.main.invocation.ToolCallStarted');
    expect(eventSubject(scope, 'ApprovalRequested')).toBe('tp.v1.evt.acme.main.approval.ApprovalRequested');
    expect(eventSubject(scope, 'McpServerRegistered')).toBe('tp.v1.evt.acme.main.registry.McpServerRegistered');
    expect(eventSubject(scope, 'SecretLeased')).toBe('tp.v1.evt.acme.main.secret.SecretLeased');
    expect(commandSubject(scope, 'approval', 'decide')).toBe('tp.v1.cmd.acme.main.approval.decide');
    expect(deadLetterSubject('TOOLPLANE_EVENTS', 'audit-projector')).toBe('tp.v1.dlq.TOOLPLANE_EVENTS.audit-projector');
  });

  it.each(badTokens)('refuse the tenant or workspace token %j with INVALID_ARGUMENT', (bad) => {
    expect(refusal(() => invocationRequestSubject({ tenant: bad, workspace: 'main' }))).toBe('INVALID_ARGUMENT');
    expect(refusal(() => eventSubject({ tenant: 'acme', workspace: bad }, 'ToolCallStarted'))).toBe('INVALID_ARGUMENT');
    expect(refusal(() => commandSubject({ tenant: bad, workspace: 'main' }, 'registry', 'register'))).toBe('INVALID_ARGUMENT');
    expect(refusal(() => invocationReplySubject(scope, bad))).toBe('INVALID_ARGUMENT');
    expect(refusal(() => eventFilter({ tenant: bad }))).toBe('INVALID_ARGUMENT');
  });

  it('refuse unknown event types, services, operations and bad stream names', () => {
    expect(refusal(() => eventSubject(scope, 'ToolInvoked' as 'ToolCallStarted'))).toBe('INVALID_ARGUMENT');
    expect(refusal(() => commandSubject(scope, 'billing' as 'registry', 'charge'))).toBe('INVALID_ARGUMENT');
    expect(refusal(() => commandSubject(scope, 'registry', 'do.it'))).toBe('INVALID_ARGUMENT');
    expect(refusal(() => commandSubject(scope, 'registry', '>'))).toBe('INVALID_ARGUMENT');
    expect(refusal(() => deadLetterSubject('EVENTS.X', 'c'))).toBe('INVALID_ARGUMENT');
    expect(refusal(() => deadLetterSubject('EVENTS', ''))).toBe('INVALID_ARGUMENT');
  });

  it('put every sample event on the subject of its family and type', () => {
    for (const event of Object.values(sampleEvents)) {
      const parsed = parseSubject(subjectOfEvent(event));
      expect(parsed).toMatchObject({ kind: 'event', tenant: event.metadata.tenant, workspace: event.metadata.workspace, type: event.type });
    }
  });
});

describe('filters', () => {
  it('narrow by scope, family and type', () => {
    expect(invocationRequestFilter()).toBe('tp.v1.inv.*.*.request');
    expect(invocationRequestFilter({ tenant: 'acme' })).toBe('tp.v1.inv.acme.*.request');
    expect(eventFilter()).toBe('tp.v1.evt.*.*.*.*');
    expect(eventFilter({ tenant: 'acme' })).toBe('tp.v1.evt.acme.*.*.*');
    expect(eventFilter({ family: 'invocation' })).toBe('tp.v1.evt.*.*.invocation.*');
    expect(eventFilter({ type: 'ApprovalGranted', workspace: 'main' })).toBe('tp.v1.evt.*.main.approval.ApprovalGranted');
    expect(commandFilter('registry')).toBe('tp.v1.cmd.*.*.registry.*');
    expect(commandFilter('audit', { tenant: 'acme', operation: 'getCall' })).toBe('tp.v1.cmd.acme.*.audit.getCall');
    expect(deadLetterFilter()).toBe('tp.v1.dlq.*.*');
    expect(deadLetterFilter({ stream: 'TOOLPLANE_EVENTS' })).toBe('tp.v1.dlq.TOOLPLANE_EVENTS.*');
  });

  it('refuse a type filed under another family', () => {
    expect(refusal(() => eventFilter({ family: 'registry', type: 'ToolCallStarted' }))).toBe('INVALID_ARGUMENT');
  });

  it('match exactly the subjects they describe', () => {
    const tenantEvents = eventFilter({ tenant: 'acme' });
    expect(subjectFiltersOverlap(tenantEvents, eventSubject(scope, 'ToolCallFailed'))).toBe(true);
    expect(subjectFiltersOverlap(tenantEvents, eventSubject({ tenant: 'other', workspace: 'main' }, 'ToolCallFailed'))).toBe(false);
    const invocationEvents = eventFilter({ family: 'invocation' });
    expect(subjectFiltersOverlap(invocationEvents, eventSubject(scope, 'ToolCallFailed'))).toBe(true);
    expect(subjectFiltersOverlap(invocationEvents, eventSubject(scope, 'ApprovalGranted'))).toBe(false);
    expect(subjectFiltersOverlap(commandFilter('registry'), commandSubject(scope, 'registry', 'register'))).toBe(true);
    expect(subjectFiltersOverlap(commandFilter('registry'), commandSubject(scope, 'approval', 'decide'))).toBe(false);
  });
});

describe('subjectFiltersOverlap', () => {
  it.each([
    ['a.b', 'a.b', true],
    ['a.b', 'a.c', false],
    ['a.*', 'a.b', true],
    ['a.*', 'a.b.c', false],
    ['a.>', 'a.b.c', true],
    ['a.>', 'a', false],
    ['*.b', 'a.*', true],
    ['a.*.c', 'a.>', true],
    ['x.>', 'y.>', false],
  ])('%s and %s overlap: %s', (a, b, expected) => {
    expect(subjectFiltersOverlap(a, b)).toBe(expected);
    expect(subjectFiltersOverlap(b, a)).toBe(expected);
  });
});

describe('parseSubject', () => {
  it('gives back what every builder was given', () => {
    expect(parseSubject(invocationRequestSubject(scope))).toEqual({ kind: 'invocationRequest', ...scope });
    expect(parseSubject(invocationReplySubject(scope, 'in-1'))).toEqual({ kind: 'invocationReply', ...scope, inbox: 'in-1' });
    for (const family of EventFamily.options) {
      for (const type of eventTypesByFamily[family]) {
        expect(parseSubject(eventSubject(scope, type))).toEqual({ kind: 'event', ...scope, family, type });
      }
    }
    expect(parseSubject(commandSubject(scope, 'secrets', 'lease'))).toEqual({ kind: 'command', ...scope, service: 'secrets', operation: 'lease' });
    expect(parseSubject(deadLetterSubject('S', 'c_1'))).toEqual({ kind: 'deadLetter', stream: 'S', consumer: 'c_1' });
  });

  it.each([
    'tp.v2.inv.acme.main.request',
    'xx.v1.inv.acme.main.request',
    'tp.v1.inv.acme.main',
    'tp.v1.inv.acme.main.request.extra',
    'tp.v1.inv.*.main.request',
    'tp.v1.inv.acme.>',
    'tp.v1.inv..main.request',
    'tp.v1.evt.acme.main.invocation.ApprovalGranted',
    'tp.v1.evt.acme.main.invocation.Unknown',
    'tp.v1.evt.acme.main.nope.ToolCallStarted',
    'tp.v1.evt.acme.main.invocation',
    'tp.v1.cmd.acme.main.billing.charge',
    'tp.v1.cmd.acme.main.registry',
    'tp.v1.dlq.S',
    'tp.v1.dlq.S.c.extra',
    'tp.v1.zzz.acme.main.request',
    '',
  ])('refuses %j with INVALID_ARGUMENT', (subject) => {
    expect(refusal(() => parseSubject(subject))).toBe('INVALID_ARGUMENT');
  });

  it('gives the scope of scoped subjects only', () => {
    expect(scopeOfSubject('tp.v1.inv.t-1.w_2.request')).toEqual({ tenant: 't-1', workspace: 'w_2' });
    expect(scopeOfSubject(eventSubject(scope, 'SecretLeased'))).toEqual(scope);
    expect(refusal(() => scopeOfSubject(deadLetterSubject('S', 'c')))).toBe('INVALID_ARGUMENT');
  });
});
