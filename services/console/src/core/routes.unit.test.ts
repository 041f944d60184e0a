import { describe, expect, it } from 'vitest';
import { routeOf } from './routes.js';

const id = '0b6a8c1e-3f7d-4c2a-9e5b-1d2c3b4a5f60';

describe('the console routes', () => {
  it('parses the fixed routes', () => {
    expect(routeOf('GET', '/')).toEqual({ kind: 'home' });
    expect(routeOf('GET', '/sign-in')).toEqual({ kind: 'sign-in-form' });
    expect(routeOf('POST', '/sign-in')).toEqual({ kind: 'sign-in' });
    expect(routeOf('POST', '/sign-out')).toEqual({ kind: 'sign-out' });
    expect(routeOf('GET', '/w/main/approvals')).toEqual({ kind: 'approvals', workspace: 'main' });
    expect(routeOf('GET', '/w/main/approvals/events')).toEqual({ kind: 'approval-events', workspace: 'main' });
    expect(routeOf('POST', `/w/main/approvals/${id}/approve`)).toEqual({ kind: 'decide', workspace: 'main', approvalId: id, decision: 'approve' });
    expect(routeOf('POST', `/w/main/approvals/${id}/reject`)).toEqual({ kind: 'decide', workspace: 'main', approvalId: id, decision: 'reject' });
    expect(routeOf('GET', '/w/main/calls')).toEqual({ kind: 'calls', workspace: 'main' });
    expect(routeOf('GET', '/w/main/calls/call_1')).toEqual({ kind: 'call', workspace: 'main', toolCallId: 'call_1' });
    expect(routeOf('GET', '/w/main/runs/run-1')).toEqual({ kind: 'run', workspace: 'main', flowRunId: 'run-1' });
    expect(routeOf('GET', '/w/main/audit')).toEqual({ kind: 'audit', workspace: 'main' });
    expect(routeOf('GET', '/assets/console.js')).toEqual({ kind: 'asset', name: 'console.js' });
  });

  it('refuses the wrong method and malformed ids', () => {
    expect(routeOf('GET', `/w/main/approvals/${id}/approve`)).toEqual({ kind: 'method-not-allowed', allow: 'POST' });
    expect(routeOf('POST', '/w/main/approvals')).toEqual({ kind: 'method-not-allowed', allow: 'GET, HEAD' });
    expect(routeOf('POST', '/w/main/approvals/not-a-uuid/approve')).toEqual({ kind: 'not-found' });
    expect(routeOf('GET', '/w/ma.in/approvals')).toEqual({ kind: 'not-found' });
    expect(routeOf('GET', '/w/main/calls/%3Cscript%3E')).toEqual({ kind: 'not-found' });
    expect(routeOf('GET', '/w/main/calls/%E0%A4%A')).toEqual({ kind: 'not-found' });
    expect(routeOf('GET', '/assets/../config.ts')).toEqual({ kind: 'not-found' });
  });
});
