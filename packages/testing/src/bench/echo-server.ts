// The benchmarks' echo tool (echo-server.mjs) as the harnesses use it: where it is, started over Streamable HTTP as
// a process of its own, and what its count file says.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { stopChild } from './service-process.js';

/** The echo tool's program (plain .mjs, run with node); `src/bench` and `dist/bench` both resolve to the source. */
export const echoServerPath = fileURLToPath(new URL('../../src/bench/echo-server.mjs', import.meta.url));

/** The echo tool serving Streamable HTTP in a process of its own. */
export interface HttpEchoServer {
  /** Where MCP is served (any path answers; this one names it). */
  readonly url: string;
  readonly pid: number;
  stop(): Promise<void>;
}

/** Starts the echo tool over Streamable HTTP on a free loopback port, counting into `countFile`. */
export async function startHttpEcho(countFile: string): Promise<HttpEchoServer> {
  const child = spawn(process.execPath, [echoServerPath, '--http'], { env: { PATH: process.env['PATH'] ?? '/usr/bin:/bin', COUNT_FILE: countFile, PORT: '0' }, stdio: ['ignore', 'pipe', 2] });
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  const stdout = child.stdout;
  if (stdout === null) throw new Error('the echo server has no stdout');
  const port = await new Promise<number>((resolve, reject) => {
    let seen = '';
    const timer = setTimeout(() => reject(new Error(`the echo server did not listen within 10 s: ${seen}`)), 10_000);
    stdout.on('data', (chunk: Buffer) => {
      seen += chunk.toString('utf8');
      const match = /LISTENING (\d+)/.exec(seen);
      if (match === null) return;
      clearTimeout(timer);
      resolve(Number(match[1]));
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`the echo server exited with code ${code} before it listened`));
    });
  });
  stdout.resume();
  const pid = child.pid;
  if (pid === undefined) throw new Error('the echo server has no pid');
  return { url: `http://127.0.0.1:${port}/mcp`, pid, stop: () => stopChild(child, exited) };
}

/** How often each text (key) was executed, from the echo tool's count file (empty when it wrote none). */
export async function executionsByKey(countFile: string): Promise<Map<string, number>> {
  const counts = new Map<string, number>();
  const text = await readFile(countFile, 'utf8').catch(() => '');
  for (const line of text.split('\n')) if (line !== '') counts.set(line, (counts.get(line) ?? 0) + 1);
  return counts;
}

/** Executions beyond one per key: what ran twice. */
export function duplicatedExecutions(executions: ReadonlyMap<string, number>, keys: (key: string) => boolean = () => true): number {
  let duplicated = 0;
  for (const [key, count] of executions) if (keys(key)) duplicated += Math.max(0, count - 1);
  return duplicated;
}
