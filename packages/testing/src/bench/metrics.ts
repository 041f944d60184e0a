// Cost counters read around a benchmark phase: a Prometheus counter by label, and a process's CPU time.
import { execFileSync } from 'node:child_process';
import { readFile } from 'node:fs/promises';

/** The values of counter `metric` at `url` (Prometheus text), summed by the value of `label`. */
export async function scrapeCounters(url: string, metric: string, label: string): Promise<Map<string, number>> {
  const text = await (await fetch(url)).text();
  const values = new Map<string, number>();
  const pattern = new RegExp(`^${metric}\\{([^}]*)\\}\\s+(\\S+)`);
  for (const line of text.split('\n')) {
    const match = pattern.exec(line);
    if (match === null) continue;
    const labels = match[1] ?? '';
    const name = new RegExp(`(?:^|,)${label}="([^"]*)"`).exec(labels)?.[1] ?? '';
    values.set(name, (values.get(name) ?? 0) + Number(match[2]));
  }
  return values;
}

/** after − before, by name. */
export function counterDelta(before: Map<string, number>, after: Map<string, number>): Map<string, number> {
  const delta = new Map<string, number>();
  for (const [name, value] of after) delta.set(name, value - (before.get(name) ?? 0));
  return delta;
}

/** The kernel's clock ticks per second, the unit of utime and stime in /proc/<pid>/stat (`getconf CLK_TCK`). */
const clockTicksPerSecond = (() => {
  try {
    const ticks = Number(execFileSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).trim());
    return ticks > 0 ? ticks : 100;
  } catch {
    return 100;
  }
})();

/** User + system CPU time of a process so far, in ms (Linux /proc); undefined elsewhere or when it is gone. */
export async function processCpuMs(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces) start after the last ')'; utime and stime are 14 and 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return (ticks * 1000) / clockTicksPerSecond;
  } catch {
    return undefined;
  }
}

/** CPU ms so far of each named process (the ones gone or unknown left out). */
export async function sampleCpu(pids: Readonly<Record<string, number | undefined>>): Promise<Record<string, number>> {
  const cpuMs: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) {
    const ms = pid === undefined ? undefined : await processCpuMs(pid);
    if (ms !== undefined) cpuMs[name] = ms;
  }
  return cpuMs;
}

/** CPU ms per call of each process between two samples, and their total (the figures are totals when no call ended). */
export function cpuMsPerCall(before: Readonly<Record<string, number>>, after: Readonly<Record<string, number>>, calls: number): Record<string, number> {
  const per = (value: number) => Number((value / Math.max(1, calls)).toFixed(2));
  const spent = Object.keys(after).map((name) => [name, (after[name] ?? 0) - (before[name] ?? 0)] as const);
  return { ...Object.fromEntries(spent.map(([name, ms]) => [name, per(ms)])), total: per(spent.reduce((sum, [, ms]) => sum + ms, 0)) };
}
