// The README's first-call path ("Quick start"), typed as a new user types it: `npm start`, then shell commands from
// the repository root through the `toolplane` bin (`npx toolplane …`) and infra/local/dev-keys.mjs. The commands
// below are the README's, word for word; only TOOLPLANE_NATS_URL (this file's own nats-server: the services' stream
// and consumer names are fixed, see platform-harness.ts) and TOOLPLANE_LOCAL_DIR (where the development keys are
// kept) differ from a user's machine.
import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, testScope } from '@toolplane/testing';
import { startPrivateNats, type PrivateNats } from './platform-harness.js';
import { freeBasePort, startLocalPlatform, type LocalPlatform } from './service-process.js';

const scope = testScope('quickstart');
const repoRoot = path.resolve(import.meta.dirname, '../..');

/** What one shell command printed. */
interface ShellRun {
  readonly code: number | null;
  readonly out: string;
  readonly err: string;
}

let dir: string;
let nats: PrivateNats;
let platform: LocalPlatform | undefined;
let env: NodeJS.ProcessEnv = {};

/** Runs a command line with bash from the repository root, in the user's environment `env`. */
function sh(command: string): Promise<ShellRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('bash', ['-c', command], { cwd: repoRoot, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (chunk: Buffer) => (out += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (err += chunk.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, out, err }));
  });
}

/** Runs a command that must succeed; its standard output. */
async function ok(command: string): Promise<string> {
  const run = await sh(command);
  if (run.code !== 0) throw new Error(`\`${command}\` exited ${run.code}:\n${run.err}${run.out}`);
  return run.out;
}

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'toolplane-quick-start-'));
  nats = await startPrivateNats(dir);
  const localDir = path.join(dir, 'local');
  platform = await startLocalPlatform({
    natsUrl: nats.url,
    mongoUrl: scope.mongoUrl,
    database: scope.dbName,
    localDir,
    basePort: await freeBasePort(),
  });
  // A user's shell: no scope settings (the CLI takes tenant and workspace from the token), the platform's NATS.
  env = Object.fromEntries(Object.entries(process.env).filter(([key]) => !key.startsWith('TOOLPLANE_') && key !== 'NATS_URL'));
  env['TOOLPLANE_NATS_URL'] = nats.url;
  env['TOOLPLANE_LOCAL_DIR'] = localDir;
}, 300_000);

afterAll(async () => {
  if (env['RECEIPT'] !== undefined) await rm(env['RECEIPT'], { force: true });
  if (platform !== undefined) {
    platform.child.kill('SIGTERM');
    await platform.exited;
  }
  await nats.stop();
  await rm(dir, { recursive: true, force: true });
});

interface InvokeOutput {
  readonly status: string;
  readonly textContent?: string;
  readonly structuredContent?: Record<string, unknown>;
  readonly receipt: { readonly toolCallId: string; readonly invocationId: string; readonly attempt: number };
}

describe("the README's first-call path", () => {
  it('npm start says it wrote the development agent profile and prints the path', () => {
    expect(platform?.stdout()).toContain('development agent profile dev-agent (tenant dev, workspace main): written');
    expect(platform?.stdout()).toContain('npx toolplane invoke everything.echo');
  });

  it('register, discover, bind, agent token, invoke, verify; same key twice runs once; a conflicting repeat is CONFLICT twice', { timeout: 240_000 }, async () => {
    env['TOOLPLANE_TOKEN'] = (await ok('node infra/local/dev-keys.mjs token')).trim();

    env['SERVER'] = (
      await ok(
        `npx toolplane servers register --name everything --json --stdio "node $(npm root)/@modelcontextprotocol/server-everything/dist/index.js stdio" | node -p 'JSON.parse(require("fs").readFileSync(0)).server.serverId'`,
      )
    ).trim();

    await ok('npx toolplane servers discover $SERVER');
    expect(await ok('npx toolplane tools list --server $SERVER')).toContain('echo');
    await ok('npx toolplane tools bind $SERVER echo --effect READ --risk LOW');

    env['TOOLPLANE_AGENT_TOKEN'] = (await ok('node infra/local/dev-keys.mjs agent-token')).trim();
    env['RECEIPT'] = (await ok('mktemp')).trim();

    await ok(`npx toolplane invoke everything.echo --args '{"message":"hello"}' --key first-1 --json > $RECEIPT`);
    const first = JSON.parse(await readFile(env['RECEIPT'], 'utf8')) as InvokeOutput;
    expect(first.status).toBe('SUCCESS');
    expect(first.textContent).toContain('Echo: hello');

    expect(await ok('npx toolplane receipts verify $RECEIPT')).toMatch(/valid/);

    // The same key and request again: the same call's outcome, not a second execution.
    const again = JSON.parse(await ok(`npx toolplane invoke everything.echo --args '{"message":"hello"}' --key first-1 --json`)) as InvokeOutput;
    expect(again.status).toBe('SUCCESS');
    expect([again.textContent, again.structuredContent]).toEqual([first.textContent, first.structuredContent]);
    expect(again.receipt.toolCallId).toBe(first.receipt.toolCallId);
    expect([again.receipt.invocationId, again.receipt.attempt]).toEqual([first.receipt.invocationId, 1]);

    // The same key with other arguments: CONFLICT, and again CONFLICT (never the first request's result).
    for (const attempt of [1, 2]) {
      const conflicting = await sh(`npx toolplane invoke everything.echo --args '{"message":"different"}' --key first-1`);
      expect(conflicting.code, `conflicting repeat ${attempt}: ${conflicting.out}`).toBe(1);
      expect(conflicting.err, `conflicting repeat ${attempt}`).toMatch(/^CONFLICT: /m);
      expect(conflicting.out).not.toContain('Echo: hello');
    }

    // The audit record of the key, once the projection has it: one call, one attempt (the repeats executed nothing).
    const calls = await eventually('the call of key first-1 in the audit projection', async () => {
      const page = JSON.parse(await ok('npx toolplane calls list --key first-1 --json')) as { items: { toolCallId: string; attemptCount: number }[] };
      return page.items.length > 0 ? page : undefined;
    });
    expect(calls.items.map((call) => [call.toolCallId, call.attemptCount])).toEqual([[first.receipt.toolCallId, 1]]);
  });

  it("publishes the README's example Flow as a tool and calls it: its output, and its FlowRun in the receipt", { timeout: 240_000 }, async () => {
    expect(env['TOOLPLANE_AGENT_TOKEN']).toBeDefined();
    await ok('npx toolplane flows draft greet --file examples/flows/greet.flow.json');
    await ok('npx toolplane flows publish greet');
    await ok('npx toolplane flows activate greet --flow-version 1');
    await ok('npx toolplane policies agent put --file examples/flows/greet.agent-profile.json');
    await ok('npx toolplane definitions create --file examples/flows/greet.definition.json');
    const called = JSON.parse(await ok(`npx toolplane invoke flows.demo.greet --args '{"name":"ada"}' --key greet-1 --json`)) as InvokeOutput & {
      receipt: { flowRun?: { flowRunId: string; flowId: string; flowVersion: number } };
    };
    expect(called.status).toBe('SUCCESS');
    expect(called.structuredContent).toEqual({ greeting: 'Echo: hello ada' });
    expect(called.receipt.flowRun).toMatchObject({ flowId: 'greet', flowVersion: 1 });
    const runs = JSON.parse(await ok('npx toolplane runs list --json')) as { runs: { flowRunId: string; state: string }[] };
    expect(runs.runs).toContainEqual(expect.objectContaining({ flowRunId: called.receipt.flowRun?.flowRunId, state: 'Completed' }));
  });
});
