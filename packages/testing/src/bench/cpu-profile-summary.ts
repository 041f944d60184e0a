// Summarizes a V8 CPU profile (`node --cpu-prof`): self time by where it is spent (a package, a service's own code,
// Node internals, GC, idle) and the functions with the most self time.
import { readFile, readdir, writeFile } from 'node:fs/promises';
import path from 'node:path';

/** The parts of a .cpuprofile file this summary reads. */
export interface CpuProfile {
  readonly startTime: number;
  readonly nodes: readonly { readonly id: number; readonly callFrame: { readonly functionName: string; readonly url: string; readonly lineNumber: number } }[];
  readonly samples: readonly number[];
  readonly timeDeltas: readonly number[];
}

/** Shares (percent of busy time, idle excluded) by bucket and by function. */
export interface CpuProfileSummary {
  readonly busyMs: number;
  readonly idleShare: number;
  readonly buckets: readonly { readonly name: string; readonly share: number }[];
  readonly functions: readonly { readonly name: string; readonly share: number }[];
}

const packageBuckets: readonly [RegExp, string][] = [
  [/node_modules\/(mongodb|bson|mongodb-connection-string-url)\//, 'mongodb driver + bson'],
  [/node_modules\/@nats-io\//, 'nats.js'],
  [/node_modules\/zod\//, 'zod (contract validation)'],
  [/node_modules\/(ajv|ajv-formats|fast-uri|fast-deep-equal|json-schema-traverse)\//, 'ajv (argument validation)'],
  [/node_modules\/jose\//, 'jose (context token)'],
  [/node_modules\/@modelcontextprotocol\/sdk\/dist\/esm\/server\//, 'MCP SDK server'],
  [/node_modules\/@modelcontextprotocol\/(server|node|core)\//, 'MCP SDK v2 server (server, node, core)'],
  [/node_modules\/@modelcontextprotocol\//, 'MCP SDK client'],
  [/node_modules\/(hono|@hono)\//, 'hono (SDK HTTP)'],
  [/node_modules\/(undici|express|body-parser|raw-body|content-type)\//, 'HTTP packages'],
  [/node_modules\/(pino|pino-std-serializers|sonic-boom|thread-stream)\//, 'pino'],
  [/node_modules\/cockatiel\//, 'cockatiel'],
  [/node_modules\/re2js\//, 're2js'],
  [/node_modules\//, 'other packages'],
  [/packages\/store\//, '@toolplane/store'],
  [/packages\/messaging\//, '@toolplane/messaging'],
  [/packages\/contracts\//, '@toolplane/contracts (canonical JSON, hashes)'],
  [/packages\/mcp\//, '@toolplane/mcp'],
  [/packages\/auth\//, '@toolplane/auth'],
  [/packages\/service-kit\//, '@toolplane/service-kit'],
  [/packages\/client\//, '@toolplane/client'],
  [/services\/tool-adapter\//, 'tool adapter (pipeline, core)'],
  [/services\/mcp-endpoint\//, 'MCP endpoint'],
  [/^node:internal\/(crypto|webcrypto)|^node:crypto/, 'node crypto'],
  [/^node:internal\/(http|_http)|^node:(http|_http)/, 'node http'],
  [/^node:internal\/(streams|net|stream_base_commons)|^node:(net|stream)/, 'node sockets + streams'],
  [/^node:internal\/(child_process|process)|^node:child_process/, 'node child process + stdio'],
  [/^node:/, 'node other'],
];

function bucketOf(url: string, functionName: string): string {
  if (url === '') {
    if (functionName === '(garbage collector)') return 'GC';
    if (functionName === '(idle)') return 'idle';
    if (functionName === '(program)') return 'V8/native (program)';
    if (functionName === '(root)') return 'root';
    return `native: ${functionName || '(anonymous)'}`;
  }
  for (const [pattern, name] of packageBuckets) if (pattern.test(url)) return name;
  return 'other';
}

/**
 * Buckets the self time of the samples taken between `window.fromMs` and `window.toMs` after the profile started
 * (all of them by default: start-up included); `top` functions are listed.
 */
export function summarizeCpuProfile(profile: CpuProfile, window: { readonly fromMs: number; readonly toMs: number } = { fromMs: 0, toMs: Infinity }, top = 15): CpuProfileSummary {
  const nodes = new Map(profile.nodes.map((node) => [node.id, node.callFrame]));
  const byBucket = new Map<string, number>();
  const byFunction = new Map<string, number>();
  let total = 0;
  let at = 0;
  profile.samples.forEach((id, index) => {
    const frame = nodes.get(id);
    const micros = profile.timeDeltas[index] ?? 0;
    at += micros;
    if (frame === undefined || at < window.fromMs * 1000 || at > window.toMs * 1000) return;
    total += micros;
    const bucket = bucketOf(frame.url, frame.functionName);
    byBucket.set(bucket, (byBucket.get(bucket) ?? 0) + micros);
    if (bucket === 'idle') return;
    const file = frame.url.replace(/^.*\/node_modules\//, '').replace(/^file:\/\/.*?\/(packages|services)\//, '$1/');
    const name = `${frame.functionName || '(anonymous)'} ${file}${frame.url === '' ? '' : `:${frame.lineNumber + 1}`}`;
    byFunction.set(name, (byFunction.get(name) ?? 0) + micros);
  });
  const idle = byBucket.get('idle') ?? 0;
  const busy = Math.max(1, total - idle);
  const shares = (map: Map<string, number>) =>
    [...map]
      .filter(([name]) => name !== 'idle')
      .sort((a, b) => b[1] - a[1])
      .map(([name, micros]) => ({ name, share: (micros * 100) / busy }));
  return { busyMs: busy / 1000, idleShare: (idle * 100) / Math.max(1, total), buckets: shares(byBucket), functions: shares(byFunction).slice(0, top) };
}

/**
 * Reads the profile `--cpu-prof` wrote into `dir`, summarizes it over `window` and logs the summary under `title`
 * (the buckets of at least 0.5 % and the top functions); `saveAs` keeps the raw profile. Undefined when none was written.
 */
export async function readCpuProfile(dir: string, window: { readonly fromMs: number; readonly toMs: number }, title: string, log: (line: string) => void, saveAs?: string): Promise<CpuProfileSummary | undefined> {
  const file = (await readdir(dir).catch(() => [])).find((name) => name.endsWith('.cpuprofile'));
  if (file === undefined) {
    log('no CPU profile was written');
    return undefined;
  }
  const text = await readFile(path.join(dir, file), 'utf8');
  if (saveAs) await writeFile(saveAs, text);
  const summarized = summarizeCpuProfile(JSON.parse(text) as CpuProfile, window);
  log(`${title} (${summarized.busyMs.toFixed(0)} ms busy, ${summarized.idleShare.toFixed(0)} % idle), self time by where it is spent:`);
  for (const bucket of summarized.buckets.filter((b) => b.share >= 0.5)) log(`  ${bucket.share.toFixed(1).padStart(5)} %  ${bucket.name}`);
  log('  top functions:');
  for (const fn of summarized.functions) log(`  ${fn.share.toFixed(1).padStart(5)} %  ${fn.name}`);
  return summarized;
}
