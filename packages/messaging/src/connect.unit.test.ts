import { describe, expect, it } from 'vitest';
import { checkInboxPrefix, connectMessaging } from './connect.js';

describe('checkInboxPrefix', () => {
  it('accepts dot-separated tokens of letters, digits, _ and -', () => {
    for (const prefix of ['_INBOX_acme', '_INBOX_acme.w_1', 'tp-inbox.Tenant-9.ws_2', 'a'.repeat(200)]) expect(checkInboxPrefix(prefix)).toBe(prefix);
  });

  it.each([
    ['', 'empty'],
    ['_INBOX.>', 'a full wildcard'],
    ['_INBOX.*.acme', 'a token wildcard'],
    ['_INBOX..acme', 'an empty token'],
    ['.acme', 'a leading dot'],
    ['acme.', 'a trailing dot'],
    ['_INBOX acme', 'whitespace'],
    ['$SYS.inbox', 'a $ token'],
    ['a'.repeat(201), 'over 200 characters'],
    [Array.from({ length: 17 }, () => 'a').join('.'), 'more than 16 tokens'],
  ])('refuses %j (%s) with one INVALID_ARGUMENT line naming it', (prefix) => {
    let thrown: unknown;
    try {
      checkInboxPrefix(prefix);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toMatchObject({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^inbox prefix ".*" is malformed: [^\n]+$/) as unknown });
  });

  it('makes connectMessaging fail before it dials anything', async () => {
    // Nothing listens on port 1: a dial would be TEMPORARY_UNAVAILABLE, so INVALID_ARGUMENT proves the check came first.
    await expect(connectMessaging({ url: 'nats://127.0.0.1:1', name: 'bad-prefix', inboxPrefix: '_INBOX.>' })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
  });
});

describe('streamReplicas', () => {
  it.each([0, 2.5, 6, Number.NaN])('refuses %j with INVALID_ARGUMENT before it dials anything', async (streamReplicas) => {
    await expect(connectMessaging({ url: 'nats://127.0.0.1:1', name: 'bad-replicas', streamReplicas })).rejects.toMatchObject({
      code: 'INVALID_ARGUMENT',
      message: expect.stringMatching(/^stream replicas must be a whole number from 1 to 5/) as unknown,
    });
  });
});
