import { describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { StartupError, startService } from '@toolplane/service-kit';
import { encodeKeyringConfig } from '@toolplane/sealing';
import { testScope } from '@toolplane/testing';
import { secretBrokerService } from '../src/mod.js';
import { brokerEnv, brokerKeys } from './harness.js';
import { spawnBroker } from './service-process.js';

const scope = testScope('secretbrokerstart');
const keys = brokerKeys();
const kekExample = '(e.g. {"current":"k1","keys":{"k1":"<base64url of 32 random bytes>"}})';

async function startupError(env: Record<string, string>): Promise<StartupError> {
  try {
    const running = await startService(secretBrokerService, env);
    await running.stop();
  } catch (error) {
    expect(error).toBeInstanceOf(StartupError);
    return error as StartupError;
  }
  throw new Error('the service started');
}

describe('secret-broker start-up without a usable key-encryption key', () => {
  it('refuses to start in-process, naming SECRET_BROKER_KEKS in one line', async () => {
    const { SECRET_BROKER_KEKS: _kek, ...withoutKek } = brokerEnv(scope, keys);
    const error = await startupError(withoutKek);
    expect(error.message).toBe(`invalid configuration: SECRET_BROKER_KEKS is missing ${kekExample}`);
  });

  it('refuses a malformed keyring without repeating any key', async () => {
    const shortKey = randomBytes(16);
    const error = await startupError({ ...brokerEnv(scope, keys), SECRET_BROKER_KEKS: encodeKeyringConfig('k1', { k1: shortKey }) });
    expect(error.message).toBe(`invalid configuration: SECRET_BROKER_KEKS key k1 must be 32 bytes, not 16 ${kekExample}`);
    expect(error.message).not.toContain(shortKey.toString('base64url'));
  });

  it('the process exits 1 with one line on stderr naming the setting, and logs nothing', async () => {
    const { SECRET_BROKER_KEKS: _kek, ...withoutKek } = brokerEnv(scope, keys);
    const broker = spawnBroker(withoutKek);
    expect(await broker.exited).toBe(1);
    expect(broker.stderr()).toBe(`secret-broker: invalid configuration: SECRET_BROKER_KEKS is missing ${kekExample}\n`);
    expect(broker.stdout()).toBe('');
  });

  it('the process refuses a keyring whose current key is not in it', async () => {
    const broker = spawnBroker({ ...brokerEnv(scope, keys), SECRET_BROKER_KEKS: JSON.stringify({ current: 'k2', keys: { k1: keys.kek } }) });
    expect(await broker.exited).toBe(1);
    const stderr = broker.stderr();
    expect(stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(stderr).toMatch(/^secret-broker: invalid configuration: SECRET_BROKER_KEKS "current" must name one of the keys \(k1\)/);
    expect(stderr).not.toContain(keys.kek);
  });

  it('the process refuses to start without recipients to seal leases to', async () => {
    const { SECRET_BROKER_RECIPIENTS: _recipients, ...withoutRecipients } = brokerEnv(scope, keys);
    const broker = spawnBroker(withoutRecipients);
    expect(await broker.exited).toBe(1);
    expect(broker.stderr()).toMatch(/^secret-broker: invalid configuration: SECRET_BROKER_RECIPIENTS is missing .*\n$/);
  });
});
