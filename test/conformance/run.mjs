#!/usr/bin/env node
// `npm run conformance`: the official MCP conformance suite (`@modelcontextprotocol/conformance`, every server
// scenario) against Toolplane's governed MCP endpoint, with this folder's fixture server registered and its tools
// bound behind Toolplane, as an operator would; then the MCP Inspector's CLI lists the tools with the bearer token.
// Each scenario's outcome is compared with expected-failures.json: an unexpected failure, or an expected failure that
// passed (the list is stale), exits non-zero.
//
//   npm run conformance                          the endpoint, behind `npm start`'s platform on private ports
//   npm run conformance -- --target direct       the fixture itself over Streamable HTTP (no Toolplane): a failure
//                                                here is the fixture's, so a failure behind Toolplane is Toolplane's
//   npm run conformance -- --scenario NAME       one scenario only (of each revision, or of --revision REV)
//   npm run conformance -- --revision 2026-07-28 one protocol revision's required scenarios only (2025-11-25,
//                                                2026-07-28, or 0.1.16: that suite release's active scenarios)
//
// The suite and the Inspector need Node >= 22: they are installed with their own Node in tools/ (see its
// package.json), on first use. The platform (nats-server, FerretDB, the services, the endpoint) is started by
// infra/local/up.mjs with its data in a temporary folder and on free ports, and stopped at the end.
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import process from 'node:process';
import { clearTimeout, setTimeout } from 'node:timers';
import { URL } from 'node:url';
import { startSuiteProxy } from './suite-proxy.mjs';
import { compareOutcomes, isFailing, scenarioOfResultDir } from './outcomes.mjs';

const here = import.meta.dirname;
const root = path.resolve(here, '../..');
const toolsDir = path.join(here, 'tools');
const toolBin = (name) => path.join(toolsDir, 'node_modules/.bin', name);
/**
 * The two suite releases, each run by its own entry point (both name their command `conformance`, so neither is run
 * through node_modules/.bin): 0.2.0-alpha.12 with each revision's frozen requirements, and 0.1.16, the 2025-era suite
 * the project was first measured with, for its active set.
 */
const suiteEntry = { current: path.join(toolsDir, 'node_modules/@modelcontextprotocol/conformance/dist/index.js'), legacy: path.join(toolsDir, 'node_modules/conformance-0.1.16/dist/index.js') };
/** The fixture server's tools, as the scenarios call them (fixture-server.mjs). */
const fixtureTools = [
  'test_simple_text',
  'test_image_content',
  'test_audio_content',
  'test_embedded_resource',
  'test_multiple_content_types',
  'test_tool_with_logging',
  'test_tool_with_progress',
  'test_error_handling',
  'test_reconnection',
  'test_sampling',
  'test_elicitation',
  'test_elicitation_sep1034_defaults',
  'test_elicitation_sep1330_enums',
  'test_custom_header',
  'json_schema_2020_12_tool',
];
/** The fixture's fixed resources, resource templates and prompts, as the scenarios read and fetch them (fixture-server.mjs). */
const fixtureResources = ['test://static-text', 'test://static-binary', 'test://watched-resource'];
const fixtureResourceTemplates = ['test://template/{id}/data'];
const fixturePrompts = ['test_simple_prompt', 'test_prompt_with_arguments', 'test_prompt_with_embedded_resource', 'test_prompt_with_image'];
/**
 * The scenario sets a run checks: each protocol revision with exactly the server scenarios it requires
 * (`conformance server --requirements REV`, suite 0.2.0-alpha.12), and suite 0.1.16's active set (`--suite active`,
 * the 2025 era). The fixture speaks the 2025 era only (as most servers today), so the direct baseline has no
 * 2026-07-28 set; through Toolplane the endpoint serves both eras at one URL.
 */
const revisionsOf = { direct: ['2025-11-25', '0.1.16'], toolplane: ['2025-11-25', '2026-07-28', '0.1.16'] };

/** How a set is run: which suite release, and its selection of scenarios (all of the set's, or one). */
function suiteRun(revision, scenario) {
  if (revision === '0.1.16') return { entry: suiteEntry.legacy, selection: scenario === undefined ? ['--suite', 'active'] : ['--scenario', scenario] };
  return { entry: suiteEntry.current, selection: scenario === undefined ? ['--requirements', revision] : ['--scenario', scenario, '--spec-version', revision] };
}
/** How long the platform may take to come up (a cold build included) and one conformance run may last. */
const platformStartMs = 10 * 60_000;
const suiteMs = 10 * 60_000;

const say = (line) => process.stdout.write(`conformance: ${line}\n`);

function options(argv) {
  const value = (flag) => {
    const index = argv.indexOf(flag);
    return index === -1 ? undefined : argv[index + 1];
  };
  const target = value('--target') ?? 'toolplane';
  if (target !== 'toolplane' && target !== 'direct') throw new Error(`--target must be toolplane or direct, not ${target}`);
  const revision = value('--revision');
  if (revision !== undefined && !revisionsOf[target].includes(revision)) throw new Error(`--revision must be one of ${revisionsOf[target].join(', ')} for ${target}`);
  return { target, scenario: value('--scenario'), revisions: revision === undefined ? revisionsOf[target] : [revision] };
}

/** Installs the suite and the Inspector (tools/package-lock.json) unless they are there. */
function ensureTools() {
  if (Object.values(suiteEntry).every((entry) => existsSync(entry)) && existsSync(toolBin('inspector')) && existsSync(toolBin('node'))) return;
  say('installing the conformance suite and the Inspector (tools/)');
  // npm itself runs on the repository's Node, below the tools' engines: its warnings about that are noise here.
  const install = spawnSync('npm', ['ci', '--no-audit', '--no-fund', '--loglevel', 'error'], { cwd: toolsDir, stdio: 'inherit' });
  if (install.status !== 0) throw new Error(`npm ci in ${toolsDir} exited ${install.status}`);
}

/** A TCP port of 127.0.0.1 that was free a moment ago. */
function freePort(port = 0) {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => resolve(address.port));
    });
  });
}

/** The first of `count` consecutive free ports (up.mjs gives its services base, base+1, …). */
async function freePortRange(count) {
  for (let attempt = 0; attempt < 50; attempt += 1) {
    const base = 20_000 + Math.floor(Math.random() * 30_000);
    const free = await Promise.all(Array.from({ length: count }, (_, i) => freePort(base + i).then(() => true, () => false)));
    if (free.every(Boolean)) return base;
  }
  throw new Error(`no ${count} consecutive free ports found`);
}

/** Resolves with the first capture of `pattern` in the child's stdout, or rejects when it exits or time runs out. */
function waitForLine(child, pattern, timeoutMs, what) {
  return new Promise((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => done(new Error(`${what} did not happen within ${timeoutMs} ms; output so far:\n${seen.slice(-3000)}`)), timeoutMs);
    const onData = (chunk) => {
      seen += chunk.toString();
      const match = pattern.exec(seen);
      if (match !== null) done(undefined, match);
    };
    const onExit = (code, signal) => done(new Error(`exited (${signal ?? code}) before ${what}; output:\n${seen.slice(-3000)}`));
    function done(error, match) {
      clearTimeout(timer);
      child.stdout.off('data', onData);
      child.off('exit', onExit);
      if (error === undefined) resolve(match);
      else reject(error);
    }
    child.stdout.on('data', onData);
    child.once('exit', onExit);
  });
}

function stopChild(child, graceMs = 30_000) {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => child.kill('SIGKILL'), graceMs);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

/** The fixture over Streamable HTTP on a free port: the baseline without Toolplane. */
async function startDirect() {
  const child = spawn(process.execPath, [path.join(here, 'fixture-server.mjs'), '--http'], { env: { ...process.env, PORT: '0' }, stdio: ['ignore', 'pipe', 'inherit'] });
  const [, port] = await waitForLine(child, /LISTENING (\d+)/, 20_000, 'the fixture listening');
  return { url: `http://127.0.0.1:${port}/mcp`, token: undefined, server: undefined, stop: () => stopChild(child) };
}

/** Runs the CLI in-process against the platform as its development operator; the parsed --json answer. */
async function toolplane(platform, ...argv) {
  const { runCli } = await import('@toolplane/cli');
  let out = '';
  let err = '';
  const io = { stdout: (text) => void (out += text), stderr: (text) => void (err += text), readStdin: () => Promise.resolve(''), env: { TOOLPLANE_TOKEN: platform.operatorToken } };
  const code = await runCli(['--nats', platform.natsUrl, '--tenant', 'dev', '--workspace', 'main', '--timeout', '30000', '--json', ...argv], io);
  if (code !== 0) throw new Error(`toolplane ${argv.join(' ')} exited ${code}: ${err}${out}`);
  return JSON.parse(out);
}

/** A development token from infra/local/dev-keys.mjs (`token` for an operator, `agent-token` for dev-agent). */
function devToken(localDir, kind) {
  const run = spawnSync(process.execPath, [path.join(root, 'infra/local/dev-keys.mjs'), kind, '--expires-in', '2h'], { cwd: root, env: { ...process.env, TOOLPLANE_LOCAL_DIR: localDir }, encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`dev-keys.mjs ${kind} exited ${run.status}: ${run.stderr}`);
  return run.stdout.trim();
}

/**
 * `npm start`'s platform (infra/local/up.mjs) on free ports with its data in `localDir`, the fixture registered,
 * discovered and each of its tools, fixed resources, resource template and prompts bound (READ, LOW risk: the fixture changes nothing),
 * and a development agent token.
 */
async function startToolplane(localDir, proxyOrigin) {
  const [natsPort, monitorPort, mongoPort, debugPort] = [await freePort(), await freePort(), await freePort(), await freePort()];
  // The six services and the endpoint, on base … base+6 (the endpoint last, as in `npm start`).
  const basePort = await freePortRange(7);
  const env = {
    ...process.env,
    TOOLPLANE_LOCAL_DIR: localDir,
    TOOLPLANE_BASE_PORT: String(basePort),
    NATS_PORT: String(natsPort),
    NATS_MONITOR_PORT: String(monitorPort),
    MONGO_PORT: String(mongoPort),
    FERRETDB_DEBUG_PORT: String(debugPort),
    // The suite reaches the endpoint through the suite proxy, which keeps the suite's Host and Origin: for the
    // endpoint the proxy is where clients reach it (the Host it answers besides its own port's) and the origin the
    // suite's requests come from (allowed, as an operator allows a known client's).
    MCP_ENDPOINT_PUBLIC_URL: proxyOrigin,
    MCP_ENDPOINT_ALLOWED_ORIGINS: proxyOrigin,
  };
  delete env.NATS_URL;
  delete env.MONGODB_URL;
  say(`starting the platform (infra/local/up.mjs; logs in ${path.join(localDir, 'logs')})`);
  const up = spawn(process.execPath, [path.join(root, 'infra/local/up.mjs')], { cwd: root, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let upErr = '';
  up.stderr.on('data', (chunk) => (upErr = (upErr + chunk.toString()).slice(-8000)));
  // up.mjs stops the nats-server and FerretDB it started, except when it fails before its services run (a build
  // that fails exits at once): stop.sh, idempotent, stops whatever is still running of this folder's.
  const stop = async () => {
    await stopChild(up);
    spawnSync('bash', [path.join(root, 'infra/local/stop.sh')], { env, stdio: 'ignore' });
  };
  try {
    // One wait for both lines: they may arrive in one chunk.
    const [, natsUrl, endpointUrl] = await waitForLine(up, /toolplane: up: NATS (\S+),[\s\S]*?MCP endpoint of dev\/main: (http:\/\/\S+\/mcp\/dev\/main)/, platformStartMs, 'the platform up');
    up.stdout.resume();
    const platform = { natsUrl, operatorToken: devToken(localDir, 'token') };
    const fixture = `"${process.execPath}" "${path.join(here, 'fixture-server.mjs')}"`;
    const registered = await toolplane(platform, 'servers', 'register', '--name', 'conformance', '--stdio', fixture);
    const serverId = registered.server.serverId;
    const discovered = await toolplane(platform, 'servers', 'discover', serverId);
    if (discovered.server.state !== 'Verified') throw new Error(`the fixture was discovered into ${discovered.server.state}`);
    for (const tool of fixtureTools) {
      const bound = await toolplane(platform, 'tools', 'bind', serverId, tool, '--effect', 'read', '--risk', 'low');
      if (!bound.descriptor.active) throw new Error(`conformance.${tool} was bound inactive`);
    }
    // Its resources as an INTERNAL knowledge source (the development agent is cleared for INTERNAL), its prompts as skills.
    for (const uri of fixtureResources) {
      const bound = await toolplane(platform, 'resources', 'bind', serverId, uri, '--knowledge-source', 'conformance-fixture', '--classification', 'internal', '--risk', 'low');
      if (!bound.descriptor.active) throw new Error(`the resource ${uri} was bound inactive`);
    }
    for (const uriTemplate of fixtureResourceTemplates) {
      const bound = await toolplane(platform, 'resources', 'bind', serverId, '--template', uriTemplate, '--knowledge-source', 'conformance-fixture', '--classification', 'internal', '--risk', 'low');
      if (!bound.descriptor.active) throw new Error(`the resource template ${uriTemplate} was bound inactive`);
    }
    for (const prompt of fixturePrompts) {
      const bound = await toolplane(platform, 'prompts', 'bind', serverId, prompt, '--target', `skill:${prompt}`, '--risk', 'low');
      if (!bound.descriptor.active) throw new Error(`the prompt ${prompt} was bound inactive`);
    }
    const bound = `${fixtureTools.length} tools, ${fixtureResources.length} resources, ${fixtureResourceTemplates.length} resource template and ${fixturePrompts.length} prompts`;
    say(`fixture registered (${serverId}); ${bound} bound`);
    // The development agent (dev-agent of dev/main, which may call every bound tool up to HIGH risk) at its workspace's endpoint.
    return { url: endpointUrl, token: devToken(localDir, 'agent-token'), server: 'conformance', stop };
  } catch (error) {
    await stop();
    throw new Error(`the platform did not come up with the fixture bound; infra/local/up.mjs said:\n${upErr}`, { cause: error });
  }
}

/** The conformance suite against `url`; returns its exit code. Its full output goes to `logFile`. */
function runSuite({ entry, url, baseline, resultsDir, logFile, selection }) {
  const args = [entry, 'server', '--url', url, '--expected-failures', baseline, '-o', resultsDir, ...selection];
  return new Promise((resolve, reject) => {
    const child = spawn(toolBin('node'), args, { env: { ...process.env, PATH: `${path.dirname(toolBin('node'))}:${process.env.PATH}` }, stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    child.stdout.on('data', (chunk) => (log += chunk.toString()));
    child.stderr.on('data', (chunk) => (log += chunk.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), suiteMs);
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      writeFileSync(logFile, log, { flag: 'a' });
      resolve(signal === null ? code : 1);
    });
  });
}

/** The outcome of each scenario that ran (see isFailing). */
function readOutcomes(resultsDir) {
  const outcomes = new Map();
  for (const dir of readdirSync(resultsDir)) {
    const scenario = scenarioOfResultDir(dir);
    if (scenario === undefined) continue;
    const checks = JSON.parse(readFileSync(path.join(resultsDir, dir, 'checks.json'), 'utf8'));
    outcomes.set(scenario, { failed: checks.some(isFailing), checks });
  }
  return outcomes;
}

/**
 * Lists the tools through the MCP Inspector's CLI with the bearer token, as the README shows, negotiating `era`
 * (`legacy`: 2025-11-25, `modern`: 2026-07-28); the tools it printed.
 */
function inspectorTools(url, token, era) {
  const args = ['--cli', url, '--transport', 'http', '--protocol-era', era, '--method', 'tools/list', ...(token === undefined ? [] : ['--header', `Authorization: Bearer ${token}`])];
  const run = spawnSync(toolBin('inspector'), args, { env: { ...process.env, PATH: `${path.dirname(toolBin('node'))}:${process.env.PATH}` }, encoding: 'utf8', timeout: 60_000 });
  if (run.status !== 0) throw new Error(`the Inspector's tools/list exited ${run.status ?? run.signal}: ${run.stderr}${run.stdout}`);
  return JSON.parse(run.stdout).tools;
}

async function main() {
  const { target, scenario, revisions } = options(process.argv.slice(2));
  ensureTools();
  const expectedByRevision = JSON.parse(readFileSync(path.join(here, 'expected-failures.json'), 'utf8'))[target];
  const workDir = mkdtempSync(path.join(tmpdir(), `conformance-${target}-`));

  const started = Date.now();
  const proxyPort = await freePort();
  const service = target === 'direct' ? await startDirect() : await startToolplane(workDir, `http://127.0.0.1:${proxyPort}`);
  let proxy;
  let ok = false;
  try {
    // The endpoint wants a bearer token and names tools and prompts server.name: the suite proxy adds the one and qualifies the other.
    proxy = service.token === undefined ? undefined : await startSuiteProxy({ target: new URL(service.url).origin, token: service.token, server: service.server, port: proxyPort });
    const suiteUrl = proxy === undefined ? service.url : proxy.url(new URL(service.url).pathname);
    say(`running the server scenarios against ${target === 'direct' ? 'the fixture' : 'the endpoint'} (${suiteUrl})`);
    let code = 0;
    let verdictsOk = true;
    const totals = { scenarios: 0, passed: 0, expectedFailures: 0, unexpectedFailures: 0, unexpectedPasses: 0 };
    for (const revision of revisions) {
      const expected = expectedByRevision[revision] ?? {};
      const resultsDir = path.join(workDir, `results-${revision}`);
      const baseline = path.join(workDir, `expected-failures-${revision}.yml`);
      // The suite's own baseline format (its exit code then means the same as ours); the reasons stay in the JSON.
      writeFileSync(baseline, `server: ${JSON.stringify(Object.keys(expected))}\n`);
      const { entry, selection } = suiteRun(revision, scenario);
      code = Math.max(code, await runSuite({ entry, url: suiteUrl, baseline, resultsDir, logFile: path.join(workDir, 'suite.log'), selection }));
      const outcomes = readOutcomes(resultsDir);
      const verdict = compareOutcomes(outcomes, expected, scenario);
      say(revision === '0.1.16' ? 'suite 0.1.16, its active scenarios (2025 era):' : `protocol revision ${revision}:`);
      for (const [name, { failed }] of [...outcomes].sort(([a], [b]) => a.localeCompare(b))) {
        const mark = failed ? (Object.hasOwn(expected, name) ? 'expected failure' : 'FAILED') : Object.hasOwn(expected, name) ? 'PASSED (listed as expected failure)' : 'passed';
        say(`  ${name.padEnd(48)} ${mark}${failed && Object.hasOwn(expected, name) ? `: ${expected[name]}` : ''}`);
      }
      for (const name of verdict.unexpectedFailures) {
        for (const check of outcomes.get(name).checks.filter(isFailing)) say(`  ${name}: ${check.name}: ${check.errorMessage ?? check.description}`);
      }
      for (const name of verdict.missing) say(`  ${name}: listed as an expected failure but did not run`);
      say(
        `  ${revision}: ${outcomes.size} scenarios, ${verdict.passed} passing, ${verdict.expectedFailures} failing as listed, ` +
          `${verdict.unexpectedFailures.length} failing unexpectedly, ${verdict.unexpectedPasses.length} passing though listed`,
      );
      verdictsOk &&= verdict.ok;
      totals.scenarios += outcomes.size;
      totals.passed += verdict.passed;
      totals.expectedFailures += verdict.expectedFailures;
      totals.unexpectedFailures += verdict.unexpectedFailures.length;
      totals.unexpectedPasses += verdict.unexpectedPasses.length;
    }

    let inspectorOk = true;
    if (scenario === undefined) {
      // The fixture serves the 2025 era only; the endpoint both.
      for (const era of target === 'direct' ? ['legacy'] : ['legacy', 'modern']) {
        try {
          const listed = inspectorTools(service.url, service.token, era);
          // The endpoint lists model-safe names: the governed id `server.tool` with its dot as `__`.
          const nameOf = (tool) => (service.server === undefined ? tool : `${service.server}__${tool}`);
          const absent = fixtureTools.filter((tool) => !listed.some((entry) => entry.name === nameOf(tool)));
          const schema = listed.find((entry) => entry.name === nameOf('json_schema_2020_12_tool'))?.inputSchema;
          const schemaKept = schema?.$schema === 'https://json-schema.org/draft/2020-12/schema' && schema.$defs?.address !== undefined && schema.additionalProperties === false;
          inspectorOk &&= absent.length === 0 && schemaKept;
          say(
            `Inspector CLI tools/list (${era} era)${service.token === undefined ? '' : ' with the bearer token'}: ${listed.length} tools${absent.length === 0 ? '' : `, missing ${absent.join(', ')}`}; ` +
              `the JSON Schema 2020-12 input schema ${schemaKept ? 'kept as the fixture wrote it' : `NOT kept: ${JSON.stringify(schema)}`}`,
          );
        } catch (error) {
          inspectorOk = false;
          say(error instanceof Error ? error.message : String(error));
        }
      }
    }

    ok = verdictsOk && inspectorOk && code === 0;
    say(
      `${target} (${revisions.join(', ')}): ${totals.scenarios} scenarios in ${Math.round((Date.now() - started) / 1000)} s, ${totals.passed} passing, ${totals.expectedFailures} failing as listed, ` +
        `${totals.unexpectedFailures} failing unexpectedly, ${totals.unexpectedPasses} passing though listed; suite exit ${code}; ${ok ? 'OK' : 'NOT OK'}` +
        (ok ? '' : ` (suite output: ${path.join(workDir, 'suite.log')})`),
    );
  } finally {
    await proxy?.close();
    await service.stop();
    if (ok) rmSync(workDir, { recursive: true, force: true });
  }
  process.exitCode = ok ? 0 : 1;
}

await main();
