// The adapter's Prometheus metrics end to end: known traffic through the real pipeline (three READ calls that run,
// one denied by the agent's profile, one admitted and one refused by a rate limit, one parked for an approval), then
// one scrape of the adapter's /metrics whose counts must be exactly what that traffic caused, and the consumer
// gauges the service kit collects at scrape time for the adapter's and the audit projector's durable consumers.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { streams, type ApprovalRequested, type InvocationReply, type TenantPolicyInput } from '@toolplane/contracts';
import { FixtureServer, fixtureServerPath } from '@toolplane/mcp/testing';
import { testScope } from '@toolplane/testing';
import { toolAdapterConsumers } from '@toolplane/tool-adapter';
import { agent, e2eTenantPolicy, registerServer, startPlatform, waitFor, waitForTools, type Platform, type PlatformService } from './platform-harness.js';

const infra = testScope('metrics');
let platform: Platform;
let fixtureServerId: string;

const policy: TenantPolicyInput = e2eTenantPolicy({
  gateWrites: true,
  rateLimits: [{ tools: 'limited.*', per: 'TOOL', limit: 1, windowMs: 86_400_000 }],
});

const read = ['--effect', 'read', '--risk', 'low', '--idempotency', 'natural'];

beforeAll(async () => {
  platform = await startPlatform(infra, 'metrics');
  const counting = (name: string, bindings: Parameters<typeof registerServer>[4]) =>
    registerServer(platform, name, [process.execPath, fixtureServerPath(FixtureServer.countingEcho)], { COUNT_FILE: platform.countFile(name) }, bindings);
  fixtureServerId = await counting('fixture', [{ tool: 'count_calls', flags: read }]);
  await counting('hidden', [{ tool: 'count_calls', flags: read }]);
  await counting('limited', [{ tool: 'count_calls', flags: read }]);
  await counting('gated', [{ tool: 'count_calls', flags: ['--effect', 'write', '--risk', 'medium', '--idempotency', 'none'] }]);
  // hidden.* stays outside the agent's profile: its call is denied at AGENT_PERMISSION.
  await platform.putAgentProfile({ agentId: agent.agentId, allowedTools: ['fixture.*', 'limited.*', 'gated.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
  await platform.putTenantPolicy(policy);
  await waitForTools(platform, ['fixture.count_calls', 'hidden.count_calls', 'limited.count_calls', 'gated.count_calls']);
}, 300_000);

afterAll(async () => {
  await platform?.stop();
});

/** One sample of a Prometheus text exposition. */
interface Sample {
  readonly name: string;
  readonly labels: Readonly<Record<string, string>>;
  readonly value: number;
}

/** The samples of a text exposition (comments skipped; label values unescaped). */
function parseExposition(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#')) continue;
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (match === null) throw new Error(`not a sample line: ${line}`);
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g)) {
      if (key !== undefined && value !== undefined) labels[key] = value.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));
    }
    samples.push({ name: match[1] ?? '', labels, value: Number(match[3]) });
  }
  return samples;
}

/** The HTTP port a harness service listens on, from the line it logs once ready (`<name> ready`, with `port`). */
function httpPortOf(name: PlatformService): number {
  for (const line of platform.service(name).stdout().split('\n')) {
    if (!line.includes(`"${name} ready"`)) continue;
    const port = (JSON.parse(line) as { port?: unknown }).port;
    if (typeof port === 'number') return port;
  }
  throw new Error(`${name} logged no ready line with its port (is TEST_LOG_LEVEL above info?)`);
}

async function scrape(name: PlatformService): Promise<Sample[]> {
  const res = await fetch(`http://127.0.0.1:${httpPortOf(name)}/metrics`);
  expect(res.status).toBe(200);
  return parseExposition(await res.text());
}

/** The values of the samples named `name` whose labels include `labels`. */
function valuesOf(samples: readonly Sample[], name: string, labels: Readonly<Record<string, string>> = {}): number[] {
  return samples.filter((s) => s.name === name && Object.entries(labels).every(([key, value]) => s.labels[key] === value)).map((s) => s.value);
}

/** The one sample named `name` with exactly these labels (besides the service's default label). */
function valueOf(samples: readonly Sample[], name: string, labels: Readonly<Record<string, string>>): number | undefined {
  const found = samples.filter(
    (s) => s.name === name && Object.keys(s.labels).filter((key) => key !== 'service').length === Object.keys(labels).length && Object.entries(labels).every(([key, value]) => s.labels[key] === value),
  );
  if (found.length > 1) throw new Error(`${found.length} samples ${name} ${JSON.stringify(labels)}`);
  return found[0]?.value;
}

function status(reply: InvocationReply): string {
  if (!reply.ok) throw new Error(`the call was refused: ${reply.error.code}: ${reply.error.message}`);
  return `${reply.data.status}${reply.data.receipt.failure === undefined ? '' : ` ${reply.data.receipt.failure.code}`}`;
}

describe('the tool adapter’s /metrics', () => {
  it('counts exactly the calls, stages, rate-limit refusals and approval waits its traffic caused, and shows its consumers', { timeout: 120_000 }, async () => {
    for (const key of ['read-1', 'read-2', 'read-3']) expect(status(await platform.invoke({ toolId: 'fixture.count_calls', arguments: {}, idempotencyKey: key }))).toBe('SUCCESS');
    expect(status(await platform.invoke({ toolId: 'hidden.count_calls', arguments: {}, idempotencyKey: 'hidden-1' }))).toBe('DENIED AUTHORIZATION_DENIED');
    expect(status(await platform.invoke({ toolId: 'limited.count_calls', arguments: {}, idempotencyKey: 'limited-1' }))).toBe('SUCCESS');
    expect(status(await platform.invoke({ toolId: 'limited.count_calls', arguments: {}, idempotencyKey: 'limited-2' }))).toBe('DENIED RATE_LIMITED');
    const recorder = await platform.recordEvents();
    // Parked until a human decides, which nobody does here: its reply never comes (the platform's stop ends the wait).
    void platform.invoke({ toolId: 'gated.count_calls', arguments: {}, idempotencyKey: 'gated-1' }, { timeoutMs: 110_000 }).catch(() => undefined);
    await waitFor('ApprovalRequested', () => recorder.events.find((event): event is ApprovalRequested => event.type === 'ApprovalRequested' && event.metadata.toolId === 'gated.count_calls'));
    recorder.stop();
    expect(await platform.executions('fixture', 'count_calls')).toBe(3);

    // Every request acknowledged (the parked one too: it holds nothing), so the requests consumer is drained.
    const invocationConsumer = { stream: streams.invocations.name, consumer: toolAdapterConsumers.requests };
    const samples = await waitFor('the adapter to acknowledge every request', async () => {
      const scraped = await scrape('tool-adapter');
      return valueOf(scraped, 'toolplane_consumer_ack_pending', invocationConsumer) === 0 ? scraped : undefined;
    });

    const calls = samples.filter((s) => s.name === 'toolplane_tool_calls_total').map((s) => `${s.labels['tool']} ${s.labels['state']} ${s.labels['code']} ${s.value}`);
    expect(calls.sort()).toEqual(['fixture.count_calls Observed none 3', 'hidden.count_calls Denied AUTHORIZATION_DENIED 1', 'limited.count_calls Denied RATE_LIMITED 1', 'limited.count_calls Observed none 1']);
    expect(valueOf(samples, 'toolplane_rate_limit_rejections_total', {})).toBe(1);
    expect(valueOf(samples, 'toolplane_approval_waits_total', { side_effect: 'WRITE' })).toBe(1);
    expect(valuesOf(samples, 'toolplane_approval_waits_total').reduce((a, b) => a + b, 0)).toBe(1);
    // Every ended call was classified READ by its descriptor (the parked WRITE has not ended).
    expect(valueOf(samples, 'toolplane_tool_call_seconds_count', { side_effect: 'READ' })).toBe(6);
    expect(valuesOf(samples, 'toolplane_tool_call_seconds_count').reduce((a, b) => a + b, 0)).toBe(6);

    // 7 requests: 4 ran every stage; the profile denial went AGENT_PERMISSION → FINISH; the rate-limited one
    // TENANT_POLICY → FINISH; the gated one stopped at APPROVAL (parked).
    const stageCounts = Object.fromEntries(samples.filter((s) => s.name === 'toolplane_pipeline_stage_seconds_count').map((s) => [s.labels['stage'] ?? '', s.value] as const));
    expect(stageCounts).toEqual({
      TOOL_RESOLUTION: 7,
      SCHEMA_VALIDATION: 7,
      AGENT_PERMISSION: 7,
      TENANT_POLICY: 6,
      SIDE_EFFECT_CLASSIFICATION: 5,
      APPROVAL: 5,
      CREDENTIAL_BROKER: 4,
      SANDBOX: 4,
      START: 4,
      EXECUTE: 4,
      SANITIZE: 4,
      FINISH: 6,
      PUBLISH_TERMINAL: 6,
      REPLY: 6,
    });
    // A stage's +Inf bucket holds all its observations, and the executions took measurable time.
    expect(valueOf(samples, 'toolplane_pipeline_stage_seconds_bucket', { stage: 'EXECUTE', le: '+Inf' })).toBe(4);
    expect(valueOf(samples, 'toolplane_pipeline_stage_seconds_sum', { stage: 'EXECUTE' })).toBeGreaterThan(0);

    // The two servers that executed (fixture, limited) have closed circuits; the servers never called have none.
    expect(valueOf(samples, 'toolplane_circuit_breaker_state', { server: `${platform.scope.tenant}/${platform.scope.workspace}/${fixtureServerId}` })).toBe(0);
    expect(valuesOf(samples, 'toolplane_circuit_breaker_state')).toEqual([0, 0]);

    // The kit's gauges for both of the adapter's durable consumers, with the service's default label.
    const approvalsConsumer = { stream: streams.events.name, consumer: toolAdapterConsumers.approvals };
    for (const consumer of [invocationConsumer, approvalsConsumer]) {
      for (const gauge of ['toolplane_consumer_pending', 'toolplane_consumer_ack_pending', 'toolplane_consumer_redelivered']) {
        expect(valueOf(samples, gauge, consumer), `${gauge} ${consumer.consumer}`).toBeDefined();
      }
    }
    expect(valueOf(samples, 'toolplane_consumer_pending', invocationConsumer)).toBe(0);
    expect(valueOf(samples, 'toolplane_consumer_redelivered', invocationConsumer)).toBe(0);
    expect(samples.find((s) => s.name === 'toolplane_consumer_pending')?.labels['service']).toBe('tool-adapter');
  });

  it('shows the audit projector’s consumer draining the events the calls published', { timeout: 60_000 }, async () => {
    const events = { stream: streams.events.name };
    // Delivered (pending 0) comes before acknowledged (ack-pending 0): the projector acks once its batch is written.
    const drained = await waitFor('the audit projector to have projected and acknowledged every event', async () => {
      const samples = await scrape('audit-projector');
      const settled = [...valuesOf(samples, 'toolplane_consumer_pending', events), ...valuesOf(samples, 'toolplane_consumer_ack_pending', events)];
      return settled.length === 2 && settled.every((value) => value === 0) ? samples : undefined;
    });
    expect(valuesOf(drained, 'toolplane_consumer_redelivered', events)).toHaveLength(1);
    expect(drained.find((s) => s.name === 'toolplane_consumer_pending')?.labels['service']).toBe('audit-projector');
  });
});
