import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';

/** Sends `signal` to every process of the group led by `pgid`; a group that is already gone is not an error. */
export function signalProcessGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (error) {
    const code = (error as { code?: unknown }).code;
    if (code !== 'ESRCH' && code !== 'EPERM') throw error;
  }
}

/** Resolves true when the child has exited, or false after `ms`; never rejects. */
export function waitForExit(child: ChildProcess, ms: number): Promise<boolean> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (exited: boolean) => {
      clearTimeout(timer);
      child.off('exit', onExit);
      resolve(exited);
    };
    const onExit = () => done(true);
    const timer = setTimeout(() => done(false), ms);
    child.once('exit', onExit);
  });
}

/**
 * Whether a process with this id is running. A zombie (exited, not yet reaped: common for orphaned grandchildren
 * in containers whose init does not reap) counts as gone.
 */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
  } catch (error) {
    return (error as { code?: unknown }).code === 'EPERM';
  }
  try {
    // /proc/<pid>/stat is "pid (comm) state …"; comm may contain spaces and parentheses, so read after the last ')'.
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3);
    return state !== 'Z' && state !== 'X';
  } catch {
    // No procfs (not Linux), or the process vanished between the two checks: ask once more.
    try {
      process.kill(pid, 0);
      return true;
    } catch {
      return false;
    }
  }
}
