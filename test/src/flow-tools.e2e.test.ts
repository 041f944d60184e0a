// Flow-backed tools end to end: the five pipeline services and two FlowRunner replicas as processes over a private
// NATS and FerretDB. An operator publishes Flows whose steps call @modelcontextprotocol/server-everything,
// @modelcontextprotocol/server-memory and a counting fixture, publishes them as ToolDefinitions, and an agent calls
// them through the SDK (and an MCP client through the endpoint). FlowRunner and the adapter are SIGKILLed at named
// positions to prove that a run resumes on any replica without repeating a step, and ends Uncertain when a WRITE
// was interrupted.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { z } from 'zod';
import {
  auditCommandSchemas,
  flowCommandSchemas,
  flowRunCommandSchemas,
  flowToolId,
  verifyReceipt,
  type FlowDefinitionBody,
  type FlowRunView,
  type InvocationResult,
  type LifecycleEvent,
  type TenantPolicyInput,
  type ToolDefinitionSpec,
} from '@toolplane/contracts';
import { createToolplaneClient, type ToolplaneClient } from '@toolplane/client';
import { connectMcp } from '@toolplane/mcp';
import { FixtureServer, fixtureServerPath, realServerPath, sandboxScratchDir } from '@toolplane/mcp/testing';
import { testScope } from '@toolplane/testing';
import { agent, e2eTenantPolicy, registerServer, startPlatform, waitFor, waitForTools, type Platform } from './platform-harness.js';
import { startHttpProcess } from './http-process.js';
import type { ServiceProcess } from './service-process.js';

const infra = testScope('flow_tools');
let platform: Platform;
let client: ToolplaneClient;
let memoryFile: string;

// WRITE runs ungated (the crash tests count its executions); DESTRUCTIVE waits for a human.
const policy: TenantPolicyInput = e2eTenantPolicy({ gateWrites: false });

const read = ['--effect', 'read', '--risk', 'low', '--idempotency', 'natural'];
const write = ['--effect', 'write', '--risk', 'medium', '--idempotency', 'none'];

const nameInput = { type: 'object', properties: { name: { type: 'string', minLength: 1 } }, required: ['name'], additionalProperties: false } as const;

/** A Flow's body: steps in order, then an output mapping. */
function body(steps: FlowDefinitionBody['steps'], output: string, outputSchema: Record<string, unknown>): FlowDefinitionBody {
  return { inputSchema: { ...nameInput }, outputSchema, steps, output };
}

const onboardOutput = { type: 'object', properties: { greeting: { type: 'string' }, entities: { type: 'number' } }, required: ['greeting', 'entities'] };
/** READ (server-everything's echo), then a non-idempotent WRITE (server-memory's create_entities). */
const onboard = body(
  [
    { id: 'greet', kind: 'call', tool: 'everything.echo', arguments: '{"message": "hello " & input.name}' },
    { id: 'remember', kind: 'call', tool: 'memory.create_entities', arguments: '{"entities": [{"name": input.name, "entityType": "customer", "observations": [steps.greet.text]}]}' },
  ],
  '{"greeting": steps.greet.text, "entities": $count(steps.remember.entities)}',
  onboardOutput,
);

const tallyOutput = { type: 'object', properties: { greeting: { type: 'string' }, count: { type: 'number' } }, required: ['greeting', 'count'] };
/** READ, then the counting fixture's WRITE: its count file says how often the effect ran. */
const tally = body(
  [
    { id: 'greet', kind: 'call', tool: 'everything.echo', arguments: '{"message": "tally " & input.name}' },
    { id: 'count', kind: 'call', tool: 'counter.count_calls', arguments: '{}' },
  ],
  '{"greeting": steps.greet.text, "count": steps.count.count}',
  tallyOutput,
);

// The counting fixture answers its count as structured content: {"count": n}.
const countOutput = { type: 'object', properties: { count: { type: 'number' } }, required: ['count'] };

type FlowOperation = keyof typeof flowCommandSchemas;

/** An operator request to FlowRunner's management operations. */
async function manage<K extends FlowOperation>(operation: K, request: z.input<(typeof flowCommandSchemas)[K]['request']>): Promise<z.output<(typeof flowCommandSchemas)[K]['reply']>> {
  const schemas = flowCommandSchemas[operation] as { readonly request: z.ZodType; readonly reply: z.ZodType };
  return (await platform.command('flows', operation, schemas, request)) as z.output<(typeof flowCommandSchemas)[K]['reply']>;
}

/** Drafts, publishes and activates a Flow version; its version number. */
async function publishFlow(flowId: string, flowBody: FlowDefinitionBody): Promise<number> {
  const version = (await manage('saveFlowDraft', { flowId, body: flowBody })).flow.version;
  await manage('publishFlow', { flowId, version });
  await manage('activateFlow', { flowId, version });
  return version;
}

/** A definition following the Flow's active version. */
function definition(name: string, flowId: string, flowBody: FlowDefinitionBody, extra: Partial<ToolDefinitionSpec> = {}): ToolDefinitionSpec {
  return {
    name,
    mcpName: name.replaceAll('.', '_'),
    description: `The ${flowId} flow as a tool.`,
    enabled: true,
    approval: 'Policy',
    sideEffectClass: 'WRITE',
    riskClass: 'MEDIUM',
    inputSchema: flowBody.inputSchema,
    outputSchema: flowBody.outputSchema,
    timeoutMs: 90_000,
    flow: { flowId, follow: 'active' },
    ...extra,
  };
}

async function createDefinition(spec: ToolDefinitionSpec): Promise<{ etag: string }> {
  return manage('createDefinition', { definition: spec });
}

/** FlowRunner's view of a run. */
async function run(flowRunId: string): Promise<FlowRunView> {
  return (await platform.command('flows', 'getRun', flowRunCommandSchemas.getRun, { flowRunId })).run;
}

/** Calls a flow tool through the SDK, as the agent. */
function callFlow(definitionName: string, args: Record<string, unknown>, idempotencyKey: string, timeoutMs = 120_000): Promise<InvocationResult> {
  return client.invoke(flowToolId(definitionName), args, { idempotencyKey, timeoutMs });
}

/** How often `label` was counted by the counting fixture `name`. */
const executions = (name: string) => platform.executions(name, 'count_calls');

/** The lifecycle events of the journal of a run, by type and step tool. */
async function journal(flowRunId: string): Promise<{ eventType: string; toolId: string }[]> {
  const reply = await platform.command('audit', 'flowJournal', auditCommandSchemas.flowJournal, { flowRunId, limit: 200 });
  return reply.entries.map((entry) => ({ eventType: entry.eventType, toolId: entry.toolId }));
}

/** The tools whose calls started in a run, once the projector journaled `ended` endings of its calls. */
async function startedTools(flowRunId: string, ended: number): Promise<string[]> {
  const entries = await waitFor(`the journal of ${flowRunId}`, async () => {
    const found = await journal(flowRunId);
    return found.filter((entry) => entry.eventType !== 'ToolCallStarted').length >= ended ? found : undefined;
  });
  return entries.filter((entry) => entry.eventType === 'ToolCallStarted').map((entry) => entry.toolId);
}

beforeAll(async () => {
  platform = await startPlatform(infra, 'flows', { flowRunners: 2 });
  const node = process.execPath;
  memoryFile = path.join(await sandboxScratchDir('flow-memory-'), 'memory.jsonl');
  const counting = (name: string, flags: readonly string[]) =>
    registerServer(platform, name, [node, fixtureServerPath(FixtureServer.countingEcho)], { COUNT_FILE: platform.countFile(name) }, [{ tool: 'count_calls', flags }]);
  await registerServer(platform, 'everything', [node, realServerPath('everything'), 'stdio'], {}, [
    { tool: 'echo', flags: read },
    { tool: 'trigger-long-running-operation', flags: read },
  ]);
  await registerServer(platform, 'memory', [node, realServerPath('memory')], { MEMORY_FILE_PATH: memoryFile }, [
    { tool: 'create_entities', flags: write },
    { tool: 'read_graph', flags: read },
  ]);
  await counting('counter', write);
  await counting('blind', write);
  await counting('gated', ['--effect', 'destructive', '--risk', 'medium', '--idempotency', 'none']);
  await platform.putTenantPolicy(policy);
  // The agent may call flow tools and echo; each flow's steps run as the agent `flow.<flowId>`, governed by its own profile.
  await platform.putAgentProfile({ agentId: agent.agentId, allowedTools: ['flows.**', 'everything.echo'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
  for (const flowId of ['onboard', 'tally', 'blind', 'guarded', 'slow', 'strict']) {
    await platform.putAgentProfile({ agentId: `flow.${flowId}`, allowedTools: ['everything.*', 'memory.*', 'counter.*', 'blind.*', 'gated.*'], deniedTools: [], maxRiskClass: 'HIGH', permissions: [] });
  }
  await waitForTools(platform, ['everything.echo', 'memory.create_entities', 'counter.count_calls', 'blind.count_calls', 'gated.count_calls']);
  client = await createToolplaneClient({ messaging: platform.messaging, scope: platform.scope, contextToken: () => platform.agentToken(), defaultTimeoutMs: 120_000 });
}, 300_000);

afterAll(async () => {
  await client?.close();
  await platform?.stop();
});

describe('a two-step Flow published as a tool', () => {
  let flowRunId: string;

  it('is published, defined, materialized and listed in the effective tool set', { timeout: 120_000 }, async () => {
    expect(await publishFlow('onboard', onboard)).toBe(1);
    const created = await createDefinition(definition('crm.onboard', 'onboard', onboard));
    expect(created.etag).toBe('"1"');
    await waitForTools(platform, [flowToolId('crm.onboard')]);
    const tools = await client.effectiveTools();
    const tool = tools.tools.find((candidate) => candidate.toolId === flowToolId('crm.onboard'));
    expect(tool).toBeDefined();
  });

  it('runs through the SDK: the flow output and the receipt (WorkItem, FlowRun, Flow version) come back; the journal has both steps', { timeout: 120_000 }, async () => {
    const result = await callFlow('crm.onboard', { name: 'ada' }, 'onboard-ada');
    expect(result.status).toBe('SUCCESS');
    expect(result.structuredContent).toEqual({ greeting: 'Echo: hello ada', entities: 1 });
    const flowRun = result.receipt.flowRun;
    expect(flowRun).toMatchObject({ flowId: 'onboard', flowVersion: 1, definitionName: 'crm.onboard', toolCallId: result.receipt.toolCallId });
    expect(flowRun?.workItemId).toMatch(/^wi-/);
    expect(flowRun?.flowRunId).toMatch(/^fr-/);
    expect(verifyReceipt(result.receipt, platform.receiptKeys).valid).toBe(true);
    flowRunId = flowRun?.flowRunId ?? '';

    const shown = await run(flowRunId);
    expect(shown.state).toBe('Completed');
    expect(shown.steps.map((step) => [step.stepId, step.status])).toEqual([
      ['greet', 'Succeeded'],
      ['remember', 'Succeeded'],
    ]);
    const entries = await waitFor('both steps journaled', async () => {
      const found = await journal(flowRunId);
      return found.length >= 4 ? found : undefined;
    });
    expect(entries).toEqual([
      { eventType: 'ToolCallStarted', toolId: 'everything.echo' },
      { eventType: 'ToolCallCompleted', toolId: 'everything.echo' },
      { eventType: 'ToolCallStarted', toolId: 'memory.create_entities' },
      { eventType: 'ToolCallCompleted', toolId: 'memory.create_entities' },
    ]);
    // The WRITE's effect, in server-memory's own file.
    expect((await readFile(memoryFile, 'utf8')).match(/"name":"ada"/g)).toHaveLength(1);
    // The logical call as the audit projector recorded it.
    const call = await waitFor('the RuntimeToolCall of the flow call', async () => {
      const found = await platform.command('audit', 'getCall', auditCommandSchemas.getCall, { toolCallId: result.receipt.toolCallId }).catch(() => undefined);
      return found?.call.state === 'Observed' ? found.call : undefined;
    });
    expect(call).toMatchObject({ toolId: flowToolId('crm.onboard'), state: 'Observed' });
  });

  it('replays the same outcome for the same key, running nothing again', { timeout: 60_000 }, async () => {
    const again = await callFlow('crm.onboard', { name: 'ada' }, 'onboard-ada');
    expect(again.receipt.flowRun?.flowRunId).toBe(flowRunId);
    expect(again.structuredContent).toEqual({ greeting: 'Echo: hello ada', entities: 1 });
    expect((await readFile(memoryFile, 'utf8')).match(/"name":"ada"/g)).toHaveLength(1);
    await expect(callFlow('crm.onboard', { name: 'bob' }, 'onboard-ada')).rejects.toMatchObject({ code: 'CONFLICT' });
  });

  it('is listed and called by an MCP client through the endpoint, the receipt in _meta', { timeout: 120_000 }, async () => {
    const endpoint = await startEndpoint();
    try {
      for (const url of [`${endpoint.base}/mcp/${platform.scope.tenant}/${platform.scope.workspace}`, `${endpoint.base}/mcp/${platform.scope.tenant}/${platform.scope.workspace}/flows`]) {
        const session = await connectMcp({ transport: 'http', url, headers: { Authorization: `Bearer ${await platform.agentToken()}` } }, { requestTimeoutMs: 90_000 });
        try {
          const tools = await session.listTools();
          // The workspace endpoint lists every tool offered to the agent; its flows endpoint the flow-backed ones alone.
          // Listed under model-safe names: the governed id with its dots as `__`.
          expect(tools.some((tool) => tool.name === 'everything__echo')).toBe(!url.endsWith('/flows'));
          const listed = tools.find((tool) => tool.name === flowToolId('crm.onboard').replaceAll('.', '__'));
          expect(listed?.inputSchema).toMatchObject({ type: 'object', properties: { name: { type: 'string' } } });
          const result = await session.callTool(listed?.name ?? '', { name: url.endsWith('/flows') ? 'cy' : 'bea' });
          expect(result.isError).toBe(false);
          expect(result.structuredContent).toMatchObject({ entities: 1 });
        } finally {
          await session.close();
        }
      }
      // The receipt travels in the result's _meta, which a plain JSON-RPC request sees as sent.
      const answer = await fetch(`${endpoint.base}/mcp/${platform.scope.tenant}/${platform.scope.workspace}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', authorization: `Bearer ${await platform.agentToken()}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: flowToolId('crm.onboard'), arguments: { name: 'dee' } } }),
      });
      const rpc = (await answer.json()) as { result?: { _meta?: Record<string, unknown> } };
      expect(rpc.result?._meta?.['dev.toolplane/receipt']).toMatchObject({ state: 'Observed', flowRun: { flowId: 'onboard', flowVersion: 1 } });
    } finally {
      endpoint.service.child.kill('SIGTERM');
      await endpoint.service.exited;
    }
  });

  it('runs concurrent calls on two FlowRunner replicas with the results one would give: each WRITE once', { timeout: 180_000 }, async () => {
    const names = ['dan', 'eve', 'fay', 'gus', 'hal', 'ida'];
    const results = await Promise.all(names.map((name) => callFlow('crm.onboard', { name }, `onboard-${name}`)));
    for (const [i, result] of results.entries()) {
      expect(result.status).toBe('SUCCESS');
      expect(result.structuredContent).toEqual({ greeting: `Echo: hello ${names[i]}`, entities: 1 });
    }
    // Each run called its WRITE once.
    for (const result of results) {
      expect(await startedTools(result.receipt.flowRun?.flowRunId ?? '', 2)).toEqual(['everything.echo', 'memory.create_entities']);
    }
    // Both replicas took work: the runs did not all land on one.
    const ran = [0, 1].map((replica) => platform.service('flow-runner', replica).stdout().split('\n').filter((line) => line.includes('"flow run ended"')).length);
    expect(ran.every((count) => count > 0)).toBe(true);
  });
});

describe('a FlowRunner killed mid-run', () => {
  beforeAll(async () => {
    await publishFlow('tally', tally);
    await createDefinition(definition('ops.tally', 'tally', tally));
    await waitForTools(platform, [flowToolId('ops.tally')]);
  }, 60_000);

  /** Stops both replicas, then starts the first with a failpoint armed: it alone takes the next run. */
  async function armedRunner(failpoints: string): Promise<void> {
    await platform.kill('flow-runner', 1);
    await platform.kill('flow-runner', 0);
    await platform.restart('flow-runner', 0, { TOOLPLANE_FAILPOINTS: failpoints });
  }

  it('after step 1 is recorded: another replica resumes, step 1 is not repeated, the WRITE runs once', { timeout: 180_000 }, async () => {
    await armedRunner('flow.after-step-recorded.greet=kill');
    const calling = callFlow('ops.tally', { name: 'one' }, 'tally-one');
    await platform.service('flow-runner', 0).exited;
    await platform.restart('flow-runner', 1);
    const result = await calling;
    expect(result.receipt.failure).toBeUndefined();
    expect(result.status).toBe('SUCCESS');
    expect(result.structuredContent).toEqual({ greeting: 'Echo: tally one', count: 1 });
    expect(await executions('counter')).toBe(1);
    const flowRun = await run(result.receipt.flowRun?.flowRunId ?? '');
    expect(flowRun.steps.map((step) => [step.stepId, step.status, step.attempt])).toEqual([
      ['greet', 'Succeeded', 1],
      ['count', 'Succeeded', 1],
    ]);
    expect(await startedTools(flowRun.flowRunId, 2)).toEqual(['everything.echo', 'counter.count_calls']);
    await platform.restart('flow-runner', 0);
  });

  it('during step 2 (its call returned, its outcome not yet recorded): resumed, the WRITE ran once', { timeout: 180_000 }, async () => {
    await armedRunner('flow.before-step-outcome.count=kill');
    const calling = callFlow('ops.tally', { name: 'two' }, 'tally-two');
    await platform.service('flow-runner', 0).exited;
    await platform.restart('flow-runner', 1);
    const result = await calling;
    expect(result.receipt.failure).toBeUndefined();
    expect(result.status).toBe('SUCCESS');
    expect(await executions('counter')).toBe(2);
    expect(await startedTools(result.receipt.flowRun?.flowRunId ?? '', 2)).toEqual(['everything.echo', 'counter.count_calls']);
    await platform.restart('flow-runner', 0);
  });

  it('an interrupted WRITE (the adapter killed after the provider returned) leaves the step and the run Uncertain, never re-run', { timeout: 240_000 }, async () => {
    const blind = body([{ id: 'count', kind: 'call', tool: 'blind.count_calls', arguments: '{}' }], '{"count": steps.count.count}', countOutput);
    await publishFlow('blind', blind);
    await createDefinition(definition('ops.blind', 'blind', blind));
    await waitForTools(platform, [flowToolId('ops.blind')]);
    await platform.kill('tool-adapter');
    await platform.restart('tool-adapter', 0, { TOOLPLANE_FAILPOINTS: 'adapter.after-provider-returned=kill' });
    const calling = callFlow('ops.blind', { name: 'x' }, 'blind-x', 200_000);
    await platform.service('tool-adapter').exited;
    await platform.restart('tool-adapter');
    const result = await calling;
    expect(result.status).toBe('UNCERTAIN');
    expect(await executions('blind')).toBe(1);
    const flowRun = await run(result.receipt.flowRun?.flowRunId ?? '');
    expect(flowRun.state).toBe('Uncertain');
    expect(flowRun.steps.map((step) => [step.stepId, step.status])).toEqual([['count', 'Uncertain']]);
  });
});

describe('definitions behave as the seed says', () => {
  const strict = body([{ id: 'greet', kind: 'call', tool: 'everything.echo', arguments: '{"message": input.name}' }], '{"said": steps.greet.text}', {
    type: 'object',
    properties: { said: { type: 'string' } },
    required: ['said'],
  });

  beforeAll(async () => {
    await publishFlow('strict', strict);
  }, 60_000);

  it('refuses a schema mismatch on save and on enable; a disabled definition is editable, listed as disabled and refused on call', { timeout: 120_000 }, async () => {
    const mismatched = definition('crm.strict', 'strict', strict, { outputSchema: { type: 'object', properties: { said: { type: 'number' } } } });
    const mismatch = await createDefinition(mismatched).then(
      () => undefined,
      (error: unknown) => error as { code: string; message: string },
    );
    expect(mismatch?.code).toBe('INVALID_ARGUMENT');
    expect(mismatch?.message).toMatch(/schema/);
    const disabled = await createDefinition({ ...mismatched, enabled: false });
    await expect(manage('updateDefinition', { name: 'crm.strict', ifMatch: disabled.etag, definition: { ...mismatched, enabled: true } })).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    await waitForTools(platform, [flowToolId('crm.strict')]);
    const set = await client.effectiveTools({ explain: true });
    expect(set.tools.some((tool) => tool.toolId === flowToolId('crm.strict'))).toBe(false);
    expect(set.hidden?.find((tool) => tool.toolId === flowToolId('crm.strict'))).toBeDefined();
    const refused = await callFlow('crm.strict', { name: 'z' }, 'strict-disabled');
    expect(refused.status).toBe('DENIED');
  });

  it('refuses a stale If-Match, then accepts the current one; a deleted definition retires its tool', { timeout: 120_000 }, async () => {
    const current = await manage('getDefinition', { name: 'crm.strict' });
    const fixed = definition('crm.strict', 'strict', strict);
    const updated = await manage('updateDefinition', { name: 'crm.strict', ifMatch: current.etag, definition: fixed });
    await expect(manage('updateDefinition', { name: 'crm.strict', ifMatch: current.etag, definition: fixed })).rejects.toMatchObject({ code: 'CONFLICT' });
    const said = await waitFor('the enabled tool to be callable', async () => {
      const result = await callFlow('crm.strict', { name: 'hi' }, `strict-on-${Date.now()}`).catch(() => undefined);
      return result?.status === 'SUCCESS' ? result : undefined;
    });
    expect(said.structuredContent).toEqual({ said: 'Echo: hi' });
    await expect(manage('deleteDefinition', { name: 'crm.strict', ifMatch: current.etag })).rejects.toMatchObject({ code: 'CONFLICT' });
    await manage('deleteDefinition', { name: 'crm.strict', ifMatch: updated.etag });
    const gone = await waitFor('the deleted definition’s tool to be refused', async () => {
      const result = await callFlow('crm.strict', { name: 'hi' }, `strict-off-${Date.now()}`).catch((error: unknown) => error);
      return (result as InvocationResult).status === 'SUCCESS' ? undefined : result;
    });
    expect(gone).toBeDefined();
  });

  it('refuses activating a Flow version that would break an enabled definition following the active version', { timeout: 60_000 }, async () => {
    const broken = { ...onboard, outputSchema: { type: 'object', properties: { greeting: { type: 'string' } }, required: ['greeting'] }, output: '{"greeting": steps.greet.text}' };
    const drafted = await manage('saveFlowDraft', { flowId: 'onboard', body: broken });
    await manage('publishFlow', { flowId: 'onboard', version: drafted.flow.version });
    const refused = await manage('activateFlow', { flowId: 'onboard', version: drafted.flow.version }).then(
      () => undefined,
      (error: unknown) => error as { code: string; message: string },
    );
    expect(refused?.code).toBe('CONFLICT');
    expect(refused?.message).toContain('crm.onboard');
  });

  it('takes only the public flow input: arguments naming another tenant or workspace are refused, and scope stays the caller’s', { timeout: 60_000 }, async () => {
    const refused = await callFlow('crm.onboard', { name: 'mallory', tenant: 'other', workspace: 'other' }, 'onboard-scope');
    expect(refused.status).toBe('DENIED');
    expect(refused.receipt.failure?.code).toBe('INVALID_ARGUMENT');
    expect(refused.receipt.tenant).toBe(platform.scope.tenant);
    expect((await readFile(memoryFile, 'utf8')).includes('mallory')).toBe(false);
  });

  it('ends a run whose step outlasts the definition’s timeout as a TIMEOUT failure', { timeout: 120_000 }, async () => {
    const slow = body(
      [{ id: 'wait', kind: 'call', tool: 'everything.trigger-long-running-operation', arguments: '{"duration": 20, "steps": 4}' }],
      '{"said": "done"}',
      { type: 'object', properties: { said: { type: 'string' } } },
    );
    await publishFlow('slow', slow);
    await createDefinition(definition('ops.slow', 'slow', slow, { sideEffectClass: 'READ', riskClass: 'LOW', timeoutMs: 3_000 }));
    await waitForTools(platform, [flowToolId('ops.slow')]);
    const result = await callFlow('ops.slow', { name: 'x' }, 'slow-x');
    expect(result.status).toBe('FAILED');
    expect(result.receipt.failure?.code).toBe('TIMEOUT');
  });

  it('parks a gated step until a human approves it (surviving a FlowRunner restart), then finishes', { timeout: 240_000 }, async () => {
    const guarded = body([{ id: 'purge', kind: 'call', tool: 'gated.count_calls', arguments: '{}' }], '{"count": steps.purge.count}', countOutput);
    await publishFlow('guarded', guarded);
    // Declared WRITE so that the call itself is not gated by the policy: here it is the step that waits for a human.
    await createDefinition(definition('ops.guarded', 'guarded', guarded, { timeoutMs: 300_000 }));
    await waitForTools(platform, [flowToolId('ops.guarded')]);
    const events = await platform.recordEvents();
    const calling = callFlow('ops.guarded', { name: 'x' }, 'guarded-x', 200_000);
    const requested = await waitFor('the step’s approval request', () =>
      events.events.find((event): event is LifecycleEvent & { type: 'ApprovalRequested' } => event.type === 'ApprovalRequested' && event.metadata.toolId === 'gated.count_calls'),
    );
    events.stop();
    const flowRunId = requested.metadata.flowRunId ?? '';
    const parked = await waitFor('the run parked on its step', async () => {
      const view = await run(flowRunId);
      return view.steps[0]?.invocation?.state === 'AwaitingApproval' ? view : undefined;
    });
    expect(parked.state).toBe('Running');
    expect(await executions('gated')).toBe(0);
    // Parked durably: both replicas may go away and come back.
    await platform.kill('flow-runner', 0);
    await platform.kill('flow-runner', 1);
    await platform.restart('flow-runner', 1);
    await platform.restart('flow-runner', 0);
    expect(await platform.toolplane('approvals', 'approve', requested.data.approvalId, '--reason', 'fine')).toMatchObject({ code: 0 });
    const result = await calling;
    expect(result.receipt.failure).toBeUndefined();
    expect(result.status).toBe('SUCCESS');
    expect(result.structuredContent).toEqual({ count: 1 });
    expect(await executions('gated')).toBe(1);
  });
});

/** The MCP endpoint's composition root as a process, from source, trusting what the pipeline trusts. */
async function startEndpoint(): Promise<{ service: ServiceProcess; base: string }> {
  const { service, url } = await startHttpProcess('mcp-endpoint', platform, () => ({ MCP_ENDPOINT_CALL_TIMEOUT_MS: '90000' }));
  return { service, base: url };
}
