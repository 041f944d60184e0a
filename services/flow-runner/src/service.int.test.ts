import { generateKeyPairSync, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bearerHeaders, generateSigningKeyPair, issueToken, type SigningKeyPair } from '@toolplane/auth';
import { RunFlowReply, RunFlowRequest, commandSubject, flowRunCommandSchemas, flowToolId, flowWorkSubject, hasErrorCode, type Scope } from '@toolplane/contracts';
import { connectMessaging, publish, request, type Messaging } from '@toolplane/messaging';
import { startService, type RunningService } from '@toolplane/service-kit';
import { eventually, testScope, uniqueName } from '@toolplane/testing';
import { flowRunnerService } from './service.js';

// The service as its composition root starts it, on a real nats-server: it consumes the flow work queue and answers
// on the adapter's reply subject, and serves the run queries to operators. (The runs themselves: run-flow.int.test.ts.)

const infra = testScope('flow_service');
const scope: Scope = { tenant: uniqueName('t').slice(0, 60), workspace: 'main' };

let service: RunningService;
let messaging: Messaging;
let operator: SigningKeyPair;

beforeAll(async () => {
  operator = await generateSigningKeyPair('operator-1');
  const signing = { ...generateKeyPairSync('ed25519').privateKey.export({ format: 'jwk' }), kid: 'flow-runner-1' };
  service = await startService(flowRunnerService, {
    NATS_URL: infra.natsUrl,
    HTTP_PORT: '0',
    LOG_LEVEL: 'silent',
    FLOW_RUNNER_SIGNING_KEY: JSON.stringify(signing),
    TOOLPLANE_TRUSTED_KEYS: JSON.stringify({ [scope.tenant]: [operator.publicJwk] }),
  });
  messaging = await connectMessaging({ url: infra.natsUrl, name: 'flow-service-int-test' });
});

afterAll(async () => {
  await messaging?.drain();
  await service?.stop();
});

describe('the flow-runner service', () => {
  it('answers a flow-backed call on its reply subject: a tool without a definition is Failed NOT_FOUND, without a run', async () => {
    const replySubject = `_INBOX.${uniqueName('reply')}`;
    const replies: RunFlowReply[] = [];
    const subscription = messaging.connection.subscribe(replySubject, {
      callback: (_error, message) => {
        replies.push(RunFlowReply.parse(JSON.parse(message.string())));
      },
    });
    await messaging.connection.flush();
    const invocationId = randomUUID();
    await publish(messaging, {
      subject: flowWorkSubject(scope),
      schema: RunFlowRequest,
      msgId: invocationId,
      message: {
        toolCallId: uniqueName('call'),
        invocationId,
        attempt: 1,
        idempotencyKey: uniqueName('key'),
        toolId: flowToolId('ops.missing'),
        toolVersion: '1',
        input: {},
        principal: 'user:alice@example.com',
        correlationId: uniqueName('corr'),
        deadline: new Date(Date.now() + 20_000).toISOString(),
        replySubject,
      },
    });
    const reply = await eventually('the reply', () => replies[0], 20_000);
    subscription.unsubscribe();
    expect(reply).toMatchObject({ ok: true, data: { status: 'Failed', failure: { code: 'NOT_FOUND' } } });
  });

  it('serves run queries to operators of the workspace only', async () => {
    const token = await issueToken({ kind: 'human', tenant: scope.tenant, workspaces: [scope.workspace], principal: 'user:ops@example.com', roles: [] }, operator.privateKey, { kid: operator.kid, expiresIn: '5m' });
    const ask = (headers: Record<string, string>) =>
      request(messaging, { subject: commandSubject(scope, 'flows', 'listRuns'), requestSchema: flowRunCommandSchemas.listRuns.request, replySchema: flowRunCommandSchemas.listRuns.reply, body: {}, timeoutMs: 5_000, headers });
    expect(await ask(bearerHeaders(token))).toEqual({ runs: [] });
    const refused = await ask({}).catch((error: unknown) => error);
    expect(hasErrorCode(refused) ? refused.code : refused).toBe('AUTHENTICATION_FAILED');
    const missing = await request(messaging, {
      subject: commandSubject(scope, 'flows', 'getRun'),
      requestSchema: flowRunCommandSchemas.getRun.request,
      replySchema: flowRunCommandSchemas.getRun.reply,
      body: { flowRunId: 'fr-none' },
      timeoutMs: 5_000,
      headers: bearerHeaders(token),
    }).catch((error: unknown) => error);
    expect(hasErrorCode(missing) ? missing.code : missing).toBe('NOT_FOUND');
  });
});
