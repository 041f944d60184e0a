import { describe, expect, it } from 'vitest';
import { z } from 'zod';
import { ids, invocationMetadata, sampleEvents } from '../test/fixtures.js';
import { MAX_EVENT_BYTES } from './limits.js';
import { ApprovalEvent, EventFamily, InvocationEvent, LifecycleEvent, RegistryEvent, SecretEvent, eventFamilyOf, eventMsgId, eventTypesByFamily } from './lifecycle-event.js';

const samples = Object.values(sampleEvents);

describe('lifecycle events', () => {
  it('parse every sample, unchanged, with the union and with its family union', () => {
    const families = { invocation: InvocationEvent, approval: ApprovalEvent, registry: RegistryEvent, secret: SecretEvent };
    for (const event of samples) {
      expect(LifecycleEvent.parse(event)).toEqual(event);
      const family = eventFamilyOf(event.type);
      expect(family).not.toBe('flow');
      expect(families[family as keyof typeof families].safeParse(event).success, event.type).toBe(true);
      expect(JSON.stringify(event).length).toBeLessThan(MAX_EVENT_BYTES);
    }
  });

  it('file every event type under exactly one family, and no family lists an unknown type', () => {
    const unionTypes = LifecycleEvent.options.map((option) => option.shape.type.value).sort();
    const familyTypes = EventFamily.options.flatMap((family) => eventTypesByFamily[family]).sort();
    expect(familyTypes).toEqual(unionTypes);
    expect(Object.keys(sampleEvents).sort()).toEqual(unionTypes);
  });

  it.each(samples.map((event) => [event.type, event] as const))('%s is strict in data and metadata', (_type, event) => {
    expect(LifecycleEvent.safeParse({ ...event, data: { ...event.data, arguments: { title: 'Hi' } } }).success).toBe(false);
    expect(LifecycleEvent.safeParse({ ...event, metadata: { ...event.metadata, result: 'x' } }).success).toBe(false);
    expect(LifecycleEvent.safeParse({ ...event, extra: 1 }).success).toBe(false);
  });

  it('rejects an unknown type, a missing sequence and oversize texts', () => {
    expect(LifecycleEvent.safeParse({ ...sampleEvents.ToolCallFailed, type: 'ToolInvoked' }).success).toBe(false);
    const { sequence: _sequence, ...noSequence } = invocationMetadata;
    expect(LifecycleEvent.safeParse({ ...sampleEvents.ToolCallCompleted, metadata: noSequence }).success).toBe(false);
    expect(LifecycleEvent.safeParse({ ...sampleEvents.ToolCallCompleted, metadata: { ...invocationMetadata, sequence: 0 } }).success).toBe(false);
    const requested = sampleEvents.ApprovalRequested;
    expect(LifecycleEvent.safeParse({ ...requested, data: { ...requested.data, summary: 's'.repeat(2001) } }).success).toBe(false);
    expect(LifecycleEvent.safeParse({ ...requested, data: { ...requested.data, approvers: { roles: [], principals: [] } } }).success).toBe(false);
    const failed = sampleEvents.ToolCallFailed;
    expect(LifecycleEvent.safeParse({ ...failed, data: { ...failed.data, failure: { ...failed.data.failure, message: 'm'.repeat(4097) } } }).success).toBe(false);
  });

  it('has no free-form object anywhere, so arguments and results cannot ride along', () => {
    const offenders: string[] = [];
    const walk = (node: unknown, path: string): void => {
      if (Array.isArray(node)) return node.forEach((child, i) => walk(child, `${path}[${i}]`));
      if (typeof node !== 'object' || node === null) return;
      const schema = node as Record<string, unknown>;
      if (schema.type === 'object' && schema.additionalProperties !== false) offenders.push(path);
      for (const [key, child] of Object.entries(schema)) walk(child, `${path}.${key}`);
    };
    walk(z.toJSONSchema(LifecycleEvent), '$');
    expect(offenders).toEqual([]);
  });
});

describe('eventMsgId', () => {
  it('derives invocation-sequence events from (invocationId, sequence), whatever their eventId', () => {
    const event = sampleEvents.ToolCallStarted;
    expect(eventMsgId(event)).toBe(`${ids.invocation}:3`);
    const republished = { ...event, metadata: { ...event.metadata, eventId: '11111111-2222-4333-8444-555555555555', occurredAt: '2026-11-29T17:09:00.000Z' } };
    expect(eventMsgId(republished)).toBe(eventMsgId(event));
    expect(eventMsgId({ ...event, metadata: { ...event.metadata, sequence: 4 } })).not.toBe(eventMsgId(event));
    expect(eventMsgId(sampleEvents.ApprovalRequested)).toBe(`${ids.invocation}:3`);
  });

  it('uses the eventId for every other event', () => {
    for (const event of [sampleEvents.ApprovalGranted, sampleEvents.McpServerRegistered, sampleEvents.SecretLeased]) {
      expect(eventMsgId(event)).toBe(ids.event);
    }
  });

  it('gives distinct ids to the distinct events of one invocation', () => {
    const sequence = [1, 2, 3, 4, 5].map((n) => eventMsgId({ ...sampleEvents.ToolCallCompleted, metadata: { ...invocationMetadata, sequence: n } }));
    expect(new Set(sequence).size).toBe(5);
  });
});
