import { Uuid, deterministicUuid, uuidFromDigest } from '@toolplane/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { derivedToolCallId, invocationEventId } from './deterministic-ids.js';

describe('deterministic ids', () => {
  it('formats a digest as a valid version-8 UUID', () => {
    const id = uuidFromDigest('f'.repeat(64));
    expect(Uuid.parse(id)).toBe(id);
    expect(id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(() => uuidFromDigest('xyz')).toThrow(RangeError);
  });

  it('derives the same id from the same inputs, another from other inputs or purposes', () => {
    expect(deterministicUuid('p', { a: 1, b: 2 })).toBe(deterministicUuid('p', { b: 2, a: 1 }));
    expect(deterministicUuid('p', { a: 1 })).not.toBe(deterministicUuid('q', { a: 1 }));
    expect(invocationEventId('11111111-1111-4111-8111-111111111111', 1)).not.toBe(invocationEventId('11111111-1111-4111-8111-111111111111', 2));
  });

  it('derives an event id equal to deterministicUuid over { invocationId, sequence } (its canonical JSON written out)', () => {
    const outcome = (run: () => string) => {
      try {
        return { id: run() };
      } catch (error) {
        return { refused: error instanceof Error ? error.message : String(error) };
      }
    };
    const anyId = fc.oneof(fc.uuid(), fc.string({ unit: 'binary' }), fc.string({ unit: fc.constantFrom('a', '"', '\\', '\u0000', '\ud800', '\udc00', '\ud83d\ude00') }));
    const anySequence = fc.oneof(fc.nat(), fc.integer(), fc.double());
    fc.assert(
      fc.property(anyId, anySequence, (invocationId, sequence) => {
        expect(outcome(() => invocationEventId(invocationId, sequence))).toEqual(outcome(() => deterministicUuid('toolplane/v1/invocation-event-id', { invocationId, sequence })));
      }),
      { numRuns: 3000 },
    );
    // Written down once from the generic derivation, so a change of either is seen.
    expect(invocationEventId('11111111-1111-4111-8111-111111111111', 1)).toBe(deterministicUuid('toolplane/v1/invocation-event-id', { sequence: 1, invocationId: '11111111-1111-4111-8111-111111111111' }));
  });

  it('derives a tool call id that is a valid external id and depends on scope and key', () => {
    const id = derivedToolCallId({ tenant: 'a', workspace: 'b' }, 'key');
    expect(id).toMatch(/^tc-[0-9a-f]{40}$/);
    expect(derivedToolCallId({ tenant: 'a', workspace: 'c' }, 'key')).not.toBe(id);
  });
});
