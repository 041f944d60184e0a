import { describe, expect, it } from 'vitest';
import { RiskClass, SideEffectClass, compareRiskClasses, compareSideEffectClasses, raiseSideEffectClass } from './classification.js';

const classes = SideEffectClass.options;

describe('side-effect classes', () => {
  it('are ordered from READ to PRIVILEGED', () => {
    expect(classes).toEqual(['READ', 'WRITE', 'DESTRUCTIVE', 'EXTERNAL_COMMUNICATION', 'CODE_EXECUTION', 'PRIVILEGED']);
    expect(compareSideEffectClasses('READ', 'WRITE')).toBeLessThan(0);
    expect(compareSideEffectClasses('PRIVILEGED', 'CODE_EXECUTION')).toBeGreaterThan(0);
    expect(compareSideEffectClasses('DESTRUCTIVE', 'DESTRUCTIVE')).toBe(0);
  });

  it('can be raised but never lowered, for every pair', () => {
    for (const declared of classes) {
      for (const raise of classes) {
        const effective = raiseSideEffectClass(declared, raise);
        expect(compareSideEffectClasses(effective, declared)).toBeGreaterThanOrEqual(0);
        expect(compareSideEffectClasses(effective, raise)).toBeGreaterThanOrEqual(0);
        expect([declared, raise]).toContain(effective);
      }
    }
  });

  it('takes the strongest of several raises and ignores absent ones', () => {
    expect(raiseSideEffectClass('READ', undefined, 'WRITE', 'READ', 'CODE_EXECUTION', undefined)).toBe('CODE_EXECUTION');
    expect(raiseSideEffectClass('DESTRUCTIVE')).toBe('DESTRUCTIVE');
    expect(raiseSideEffectClass('PRIVILEGED', 'READ')).toBe('PRIVILEGED');
  });
});

describe('risk classes', () => {
  it('are ordered from LOW to CRITICAL', () => {
    expect(RiskClass.options).toEqual(['LOW', 'MEDIUM', 'HIGH', 'CRITICAL']);
    expect(compareRiskClasses('LOW', 'CRITICAL')).toBeLessThan(0);
    expect(compareRiskClasses('HIGH', 'MEDIUM')).toBeGreaterThan(0);
  });
});
