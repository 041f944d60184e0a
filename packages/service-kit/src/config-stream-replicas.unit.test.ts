import { describe, expect, it } from 'vitest';
import { ConfigError, baseServiceConfig, loadConfig, storelessServiceConfig } from './config.js';

const good = { NATS_URL: 'nats://127.0.0.1:4222', MONGODB_URL: 'mongodb://127.0.0.1:27017' };

describe('NATS_STREAM_REPLICAS', () => {
  const schema = baseServiceConfig({ httpPort: 7101 });

  it('is 1 unless set, and 3 on a cluster', () => {
    expect(loadConfig(schema, good).NATS_STREAM_REPLICAS).toBe(1);
    expect(loadConfig(schema, { ...good, NATS_STREAM_REPLICAS: '1' }).NATS_STREAM_REPLICAS).toBe(1);
    expect(loadConfig(schema, { ...good, NATS_STREAM_REPLICAS: '3' }).NATS_STREAM_REPLICAS).toBe(3);
  });

  it('is a setting of a service without MongoDB too', () => {
    expect(loadConfig(storelessServiceConfig({ httpPort: 7101 }), { NATS_URL: good.NATS_URL, NATS_STREAM_REPLICAS: '3' }).NATS_STREAM_REPLICAS).toBe(3);
  });

  it.each(['2', '5', '0', 'three', ''])('refuses %j in one line naming the setting and what it may be', (value) => {
    let thrown: unknown;
    try {
      loadConfig(schema, { ...good, NATS_STREAM_REPLICAS: value });
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(ConfigError);
    expect((thrown as Error).message).toBe('NATS_STREAM_REPLICAS must be 1 (one NATS server) or 3 (a three-node NATS cluster)');
  });
});
