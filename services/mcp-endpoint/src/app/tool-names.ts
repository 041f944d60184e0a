import type { ParamHeader } from '../core/param-headers.js';
import { changeCovers, type ToolSetChange } from '../core/tool-set-change.js';
import type { Caller } from './authenticate.js';

/** How long a caller's names are trusted without a change announced for its scope. */
const NAMES_TTL_MS = 60_000;
/** Callers (tokens) whose names one replica keeps at most; past it, the oldest go first. */
const MAX_CALLERS = 10_000;

/** A tool as a caller was listed it. */
export interface ListedTool {
  readonly name: string;
  readonly toolId: string;
  /** The `Mcp-Param-*` headers its calls carry (its valid `x-mcp-header` declarations); none when absent. */
  readonly paramHeaders?: readonly ParamHeader[];
}

interface Entry {
  readonly caller: Caller;
  readonly toolIds: ReadonlyMap<string, string>;
  readonly listedIds: ReadonlySet<string>;
  /** By tool id, only the tools that declare any (most declare none, and a replica keeps up to MAX_CALLERS lists). */
  readonly paramHeaders: ReadonlyMap<string, readonly ParamHeader[]>;
  readonly at: number;
}

/**
 * The listed names of the tools each caller was last shown, so a tools/call by a listed name (`server__tool`, or one
 * ending in a hash) finds its governed tool id without asking the adapter for the whole set again. A name is only a
 * way to say the id: the pipeline still decides whether this agent may call it. With each tool, the `Mcp-Param-*`
 * headers its listed input schema asks a 2026-07-28 call to carry (SEP-2243). Forgotten when a read model of the
 * caller's scope changes (the same watch the notification streams hear), after a minute, or past the bound.
 */
export class ToolNames {
  readonly #byToken = new Map<string, Entry>();
  readonly #now: () => number;

  constructor(now: () => number = Date.now) {
    this.#now = now;
  }

  /** Remembers what `caller` was listed: each tool's listed name, its id and the headers its calls carry. */
  remember(caller: Caller, tools: readonly ListedTool[]): void {
    this.#byToken.delete(caller.token);
    if (this.#byToken.size >= MAX_CALLERS) {
      const oldest = this.#byToken.keys().next().value;
      if (oldest !== undefined) this.#byToken.delete(oldest);
    }
    this.#byToken.set(caller.token, {
      caller,
      toolIds: new Map(tools.map((tool) => [tool.name, tool.toolId])),
      listedIds: new Set(tools.map((tool) => tool.toolId)),
      paramHeaders: new Map(tools.flatMap((tool) => (tool.paramHeaders === undefined || tool.paramHeaders.length === 0 ? [] : [[tool.toolId, tool.paramHeaders] as const]))),
      at: this.#now(),
    });
  }

  /** The tool id `caller` was last listed under `name`, while that list is still current. */
  toolIdOf(caller: Caller, name: string): string | undefined {
    return this.#current(caller)?.toolIds.get(name);
  }

  /**
   * The `Mcp-Param-*` headers a call of the tool `caller` was last listed under `name` (its listed name or its
   * governed id) carries: none when it declares none; undefined when that list is not current or has no such tool.
   */
  paramHeadersOf(caller: Caller, name: string): readonly ParamHeader[] | undefined {
    const entry = this.#current(caller);
    const toolId = entry?.toolIds.get(name) ?? (entry?.listedIds.has(name) === true ? name : undefined);
    return toolId === undefined ? undefined : (entry?.paramHeaders.get(toolId) ?? []);
  }

  /** What `caller` was last listed, while it is still current. */
  #current(caller: Caller): Entry | undefined {
    const entry = this.#byToken.get(caller.token);
    if (entry === undefined) return undefined;
    if (this.#now() - entry.at > NAMES_TTL_MS) {
      this.#byToken.delete(caller.token);
      return undefined;
    }
    return entry;
  }

  /** A read model changed for `change`'s scope (undefined: maybe every scope): the lists of that scope may be stale. */
  changed(change: ToolSetChange | undefined): void {
    for (const [token, entry] of this.#byToken) if (change === undefined || changeCovers(change, entry.caller.scope)) this.#byToken.delete(token);
  }

  get size(): number {
    return this.#byToken.size;
  }
}
