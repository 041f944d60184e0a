import { describe, expect, it } from 'vitest';
import { decisionRight } from './who-may-decide.js';

const approval = { approvers: { roles: ['approver'], principals: ['user:carol@acme.example'] }, requestedBy: 'user:bob@acme.example', state: 'Pending' as const };

describe('who may decide', () => {
  it('offers the forms to a holder of an approver role', () => {
    expect(decisionRight(approval, { principal: 'user:alice@acme.example', roles: ['viewer', 'approver'] })).toEqual({ may: true });
  });

  it('offers the forms to a principal named outright, whatever their roles', () => {
    expect(decisionRight(approval, { principal: 'user:carol@acme.example', roles: [] })).toEqual({ may: true });
  });

  it('never to the principal the call runs for, even with the role', () => {
    expect(decisionRight(approval, { principal: 'user:bob@acme.example', roles: ['approver'] })).toEqual({ may: false, why: 'own-request' });
  });

  it('not to an operator with neither, and says what is needed', () => {
    expect(decisionRight(approval, { principal: 'user:dave@acme.example', roles: ['viewer'] })).toEqual({
      may: false,
      why: 'not-approver',
      roles: ['approver'],
      principals: ['user:carol@acme.example'],
    });
  });

  it('not for an approval that is no longer pending', () => {
    expect(decisionRight({ ...approval, state: 'Granted' }, { principal: 'user:alice@acme.example', roles: ['approver'] })).toEqual({ may: false, why: 'not-pending', state: 'Granted' });
  });
});
