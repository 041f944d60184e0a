import { describe, expect, it } from 'vitest';
import { errors, RequestError, TimeoutError } from '@nats-io/nats-core';
import { JetStreamApiError } from '@nats-io/jetstream';
import { ToolplaneError } from '@toolplane/contracts';
import { toToolplaneError } from './nats-errors.js';

describe('toToolplaneError', () => {
  it.each([
    ['a timeout', new TimeoutError(), 'TIMEOUT'],
    ['no responders', new RequestError('503', { cause: new errors.NoRespondersError('x') }), 'TEMPORARY_UNAVAILABLE'],
    ['a refused connection', new errors.ConnectionError('connection refused'), 'TEMPORARY_UNAVAILABLE'],
    ['a closed connection', new errors.ClosedConnectionError(), 'TEMPORARY_UNAVAILABLE'],
    ['an authorization failure', new errors.AuthorizationError('Authorization Violation'), 'AUTHENTICATION_FAILED'],
    ['a permissions violation', new errors.PermissionViolationError('denied', 'publish', 'x'), 'AUTHORIZATION_DENIED'],
    ['a request (or JetStream publish) to a subject the user may not publish to', new RequestError('denied', { cause: new errors.PermissionViolationError('denied', 'publish', 'x') }), 'AUTHORIZATION_DENIED'],
    ['a bad request', new JetStreamApiError({ code: 400, err_code: 10052, description: 'bad' }), 'INVALID_ARGUMENT'],
    ['a missing stream', new JetStreamApiError({ code: 404, err_code: 10059, description: 'stream not found' }), 'NOT_FOUND'],
    ['JetStream unavailable', new JetStreamApiError({ code: 503, err_code: 10008, description: 'unavailable' }), 'TEMPORARY_UNAVAILABLE'],
    ['an unknown failure', new Error('boom'), 'INTERNAL'],
  ])('maps %s to %s and names the operation', (_, error, code) => {
    const mapped = toToolplaneError(error, 'publishing to a.b');
    expect(mapped).toMatchObject({ code, message: expect.stringContaining('publishing to a.b') as unknown });
    expect(mapped.cause).toBe(error);
  });

  it('keeps a taxonomy error as it is', () => {
    const error = new ToolplaneError('CONFLICT', 'taken');
    expect(toToolplaneError(error, 'x')).toBe(error);
  });
});
