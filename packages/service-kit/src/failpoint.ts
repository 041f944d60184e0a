import { ConfigError } from './config.js';

// Failpoints: named places in a service's code where a fault test makes the process die (or freeze) at exactly
// that moment, so crash recovery is proven at each step rather than by timing races. They are off unless a
// composition root arms them from its TOOLPLANE_FAILPOINTS setting, and each fires once. The registry is
// process-wide on purpose: what a failpoint does (SIGKILL, SIGSTOP) happens to the whole process anyway.

/** What an armed failpoint does when reached: `kill` sends the process SIGKILL, `stop` SIGSTOP (resume with SIGCONT). */
export type FailpointAction = 'kill' | 'stop';

const actions: ReadonlySet<string> = new Set<FailpointAction>(['kill', 'stop']);
const signals: Readonly<Record<FailpointAction, NodeJS.Signals>> = { kill: 'SIGKILL', stop: 'SIGSTOP' };

let armed = new Map<string, FailpointAction>();

/**
 * Parses a TOOLPLANE_FAILPOINTS value: `name=action` pairs separated by commas (e.g.
 * `adapter.after-started=kill`). Unset or blank arms nothing; an unknown name (when `known` is given) or action
 * is a ConfigError naming the setting.
 */
export function parseFailpoints(spec: string | undefined, known?: readonly string[]): ReadonlyMap<string, FailpointAction> {
  const parsed = new Map<string, FailpointAction>();
  for (const part of (spec ?? '').split(',')) {
    const entry = part.trim();
    if (entry === '') continue;
    const [name = '', action = '', ...rest] = entry.split('=').map((piece) => piece.trim());
    if (name === '' || rest.length > 0 || !actions.has(action)) {
      throw new ConfigError(`TOOLPLANE_FAILPOINTS: "${entry}" must be name=kill or name=stop`);
    }
    if (known !== undefined && !known.includes(name)) throw new ConfigError(`TOOLPLANE_FAILPOINTS: no failpoint is named ${name} (known: ${known.join(', ')})`);
    parsed.set(name, action as FailpointAction);
  }
  return parsed;
}

/** Arms the failpoints of a TOOLPLANE_FAILPOINTS value for this process (replacing any armed before); see parseFailpoints. */
export function armFailpoints(spec: string | undefined, known?: readonly string[]): ReadonlyMap<string, FailpointAction> {
  const parsed = parseFailpoints(spec, known);
  armed = new Map(parsed);
  return parsed;
}

/** Marks the place `name` in the code: nothing happens unless it is armed; then its action runs, once. */
export function failpoint(name: string): void {
  const action = armed.get(name);
  if (action === undefined) return;
  armed.delete(name);
  process.kill(process.pid, signals[action]);
}
