import { describe, expect, it } from 'vitest';
import { connectMessaging, type Messaging } from '@toolplane/messaging';
import { testScope } from '@toolplane/testing';
import { baseServiceConfig } from './config.js';
import { startService } from './run-service.js';

const scope = testScope('service_kit_run');

describe('startService', () => {
  it('connects with NATS_INBOX_PREFIX: the service’s request replies arrive under it', async () => {
    const prefix = `_INBOX_${scope.prefix}.svc`;
    const watcher = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_watcher` });
    const underPrefix: string[] = [];
    watcher.connection.subscribe(`${prefix}.>`, {
      callback: (error, message) => {
        if (error === null) underPrefix.push(message.subject);
      },
    });
    await watcher.connection.flush();
    let messaging: Messaging | undefined;
    const service = await startService(
      { name: 'inbox-probe', config: baseServiceConfig({ httpPort: 0 }), start: (context) => Promise.resolve(void (messaging = context.messaging)) },
      { NATS_URL: scope.natsUrl, MONGODB_URL: scope.mongoUrl, MONGODB_DATABASE: scope.dbName, HTTP_PORT: '0', LOG_LEVEL: 'silent', NATS_INBOX_PREFIX: prefix },
    );
    try {
      const before = underPrefix.length;
      // A JetStream API call is a request: its reply comes back on the connection's inbox.
      await messaging?.manager.getAccountInfo();
      await watcher.connection.flush();
      expect(underPrefix.length).toBeGreaterThan(before);
      expect(underPrefix.every((subject) => subject.startsWith(`${prefix}.`))).toBe(true);
    } finally {
      await service.stop();
      await watcher.drain();
    }
  });
});
