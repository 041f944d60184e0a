import { ToolplaneError } from '@toolplane/contracts';
import { MongoClient, MongoNetworkError, MongoServerError, MongoTopologyClosedError } from 'mongodb';
import { describe, expect, it } from 'vitest';
import { isDuplicateKeyError, storeErrorCode, toStoreError } from './store-error.js';

const serverError = (code: number, extra: Record<string, unknown> = {}) => new MongoServerError({ code, errmsg: `server said ${code}: { key: "private value" }`, ...extra });

describe('storeErrorCode', () => {
  it.each([
    ['duplicate key (MongoDB, with codeName)', serverError(11000, { codeName: 'DuplicateKey' }), 'CONFLICT'],
    ['duplicate key (FerretDB, code only)', serverError(11000), 'CONFLICT'],
    ['index options conflict', serverError(85), 'CONFLICT'],
    ['primary stepped down', serverError(189), 'TEMPORARY_UNAVAILABLE'],
    ['shutdown in progress', serverError(91), 'TEMPORARY_UNAVAILABLE'],
    ['max time expired', serverError(50), 'TIMEOUT'],
    ['bad value ($-key on FerretDB)', serverError(2), 'INVALID_ARGUMENT'],
    ['not implemented', serverError(238), 'INTERNAL'],
    ['unknown server code', serverError(424242), 'INTERNAL'],
    ['unknown code with a retryable label', serverError(424242, { errorLabels: ['RetryableWriteError'] }), 'TEMPORARY_UNAVAILABLE'],
    ['network error', new MongoNetworkError('connection reset'), 'TEMPORARY_UNAVAILABLE'],
    ['closed client', new MongoTopologyClosedError(), 'TEMPORARY_UNAVAILABLE'],
    ['server selection (by name)', Object.assign(new Error('Server selection timed out'), { name: 'MongoServerSelectionError' }), 'TEMPORARY_UNAVAILABLE'],
    ['SRV lookup failure', Object.assign(new Error('querySrv ENOTFOUND'), { code: 'ENOTFOUND' }), 'TEMPORARY_UNAVAILABLE'],
    ['a bulk write whose first write error is a duplicate', Object.assign(new Error('bulk'), { name: 'MongoBulkWriteError', writeErrors: [{ code: 11000 }] }), 'CONFLICT'],
    ['a plain bug', new TypeError('x is undefined'), 'INTERNAL'],
    ['a thrown string', 'oops', 'INTERNAL'],
  ])('%s', (_label, error, code) => {
    expect(storeErrorCode(error)).toBe(code);
  });

  it('treats a malformed URL as INVALID_ARGUMENT', () => {
    let thrown: unknown;
    try {
      new MongoClient('not-a-url');
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeDefined();
    expect(storeErrorCode(thrown)).toBe('INVALID_ARGUMENT');
  });

  it('does not read message text: a duplicate-key message with another code is not a duplicate', () => {
    expect(storeErrorCode(new MongoServerError({ code: 1, errmsg: 'E11000 duplicate key error' }))).toBe('INTERNAL');
    expect(isDuplicateKeyError(new MongoServerError({ code: 1, errmsg: 'E11000 duplicate key error' }))).toBe(false);
  });
});

describe('toStoreError', () => {
  it('keeps stored values out of the message but keeps the cause', () => {
    const original = serverError(11000);
    const translated = toStoreError(original, 'insert into tool_invocations');
    expect(translated.code).toBe('CONFLICT');
    expect(translated.retryable).toBe(false);
    expect(translated.message).toBe('insert into tool_invocations failed: duplicate key (DuplicateKey 11000)');
    expect(translated.message).not.toContain('private value');
    expect(translated.cause).toBe(original);
    expect(translated.details).toMatchObject({ serverCode: 11000, driverError: 'MongoServerError' });
  });

  it('marks unavailability retryable', () => {
    const translated = toStoreError(new MongoNetworkError('connection reset'), 'find');
    expect(translated).toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', retryable: true });
  });

  it('passes taxonomy errors through', () => {
    const original = new ToolplaneError('NOT_FOUND', 'gone');
    expect(toStoreError(original, 'x')).toBe(original);
  });

  it("turns the operation's own abort reason into CANCELLED, and a timeout into TIMEOUT", () => {
    const controller = new AbortController();
    controller.abort(new Error('shutting down'));
    expect(toStoreError(controller.signal.reason, 'find', controller.signal).code).toBe('CANCELLED');
    const timedOut = new DOMException('timed out', 'TimeoutError');
    expect(toStoreError(timedOut, 'find').code).toBe('TIMEOUT');
  });
});
