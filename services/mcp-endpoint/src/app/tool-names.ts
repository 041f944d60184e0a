import { changeCovers, type ToolSetChange } from '../core/tool-set-change.js';
import type { Caller } from './authenticate.js';

/** How long a caller's names are trusted without a change announced for its scope. */
const NAMES_TTL_MS = 60_000;
/** Callers (tokens) whose names one replica keeps at most; past it, the oldest go first. */
const MAX_CALLERS = 10_000;

interface Entry {
  readonly caller: Caller;
  readonly toolIds: ReadonlyMap<string, string>;
  readonly at: number;
}

/**
 * The listed names of the tools each caller was last shown, so a tools/call by a listed name (`server__tool`, or one
 * ending in a hash) finds its governed tool id without asking the adapter for the whole set again. A name is only a
 * way to say the id: the pipeline still decides whether this agent may call it. Forgotten when a read model of the
 * caller's scope changes (the same watch the notification streams hear), after a minute, or past the bound.
 */
export class ToolNames {
  readonly #byToken = new Map<string, Entry>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Remembers what `caller` was listed: each tool's listed name and its id. */
  remember(caller: Caller, tools: readonly { readonly name: string; readonly toolId: string }[]): void {
    this.#byToken.delete(caller.token);
    if (this.#byToken.size >= MAX_CALLERS) {
      const oldest = this.#byToken.keys().next().value;
      if (oldest !== undefined) this.#byToken.delete(oldest);
    }
    this.#byToken.set(caller.token, { caller, toolIds: new Map(tools.map((tool) => [tool.name, tool.toolId])), at: this.#now() });
  }

  /** The tool id `caller` was last listed under `name`, while that list is still current. */
  toolIdOf(caller: Caller, name: string): string | undefined {
    const entry = this.#byToken.get(caller.token);
    if (entry === undefined) return undefined;
    if (this.#now() - entry.at > NAMES_TTL_MS) {
      this.#byToken.delete(caller.token);
      return undefined;
    }
    return entry.toolIds.get(name);
  }

  /** A read model changed for `change`'s scope (undefined: maybe every scope): the lists of that scope may be stale. */
  changed(change: ToolSetChange | undefined): void {
    for (const [token, entry] of this.#byToken) if (change === undefined || changeCovers(change, entry.caller.scope)) this.#byToken.delete(token);
  }

  get size(): number {
    return this.#byToken.size;
  }
}
