import { describe, expect, it } from 'vitest';
import { eventSubject, hasErrorCode, subjectOfEvent } from '@toolplane/contracts';
import { callEvents } from '../test/events.js';
import { acceptEvent } from './event-checks.js';

const [event] = callEvents({ tenant: 'acme', workspace: 'dev', toolCallId: 'checks', attempts: [{ outcome: 'Completed' }] });
if (event === undefined) throw new Error('no event');

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (hasErrorCode(error) && error.code === 'INVALID_ARGUMENT' && !error.retryable) return error.message;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('acceptEvent', () => {
  it('accepts an event on its own subject and gives its canonical JSON', () => {
    const accepted = acceptEvent(event, subjectOfEvent(event));
    expect(JSON.parse(accepted.canonical)).toEqual(event);
  });

  it("refuses an event published on another tenant's or workspace's subject", () => {
    expect(refusal(() => acceptEvent(event, eventSubject({ tenant: 'globex', workspace: 'dev' }, event.type)))).toMatch(/names acme\/dev .* globex\/dev/);
    expect(refusal(() => acceptEvent(event, eventSubject({ tenant: 'acme', workspace: 'prod' }, event.type)))).toMatch(/acme\/prod/);
  });

  it("refuses an event published on another type's subject", () => {
    expect(refusal(() => acceptEvent(event, eventSubject({ tenant: 'acme', workspace: 'dev' }, 'ToolCallFailed')))).toMatch(/another type/);
  });

  it('refuses an event over the size bound', () => {
    expect(refusal(() => acceptEvent(event, subjectOfEvent(event), 100))).toMatch(/may not exceed 100 bytes/);
  });
});
