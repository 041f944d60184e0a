import { McpServer, type WatchLease } from '@toolplane/contracts';
import type { TypedKv } from '@toolplane/messaging';
import type { Logger } from '@toolplane/service-kit';
import { claimLease, releaseLease } from '../adapters/watch-leases.js';
import { changeServer } from './aggregates.js';
import { syncDescriptorHealth } from './descriptor-effects.js';
import type { Actor, RegistryContext } from './registry-context.js';
import { recordDiscovery } from './server-commands.js';

// The watch: every health interval each replica looks at the Active and Degraded servers and watches those whose
// lease it holds (one lease per server in a KV bucket, so one replica pings and re-discovers each server at a time;
// the others take over when it lapses). Which servers are watched comes from the servers' read model (a server that
// just became Active is picked up a round later at worst); every change is decided against the server's record and
// appended at the version read, with deterministic event ids, so even two replicas that both believed they held a
// lease could not record or emit a change twice.

/** Settings of the watch. */
export interface WatcherOptions {
  /** Names this replica in leases and as the actor of the changes it makes. */
  readonly instanceId: string;
  readonly healthIntervalMs: number;
  /** How long one health check may take before it counts as failed. */
  readonly healthTimeoutMs: number;
  /** How often a watched server is re-discovered even without tools/list_changed. */
  readonly discoveryIntervalMs: number;
  /** How long a lease holds without renewal. */
  readonly leaseMs: number;
  /** Servers checked at once by one replica. */
  readonly concurrency: number;
  readonly leases: TypedKv<WatchLease>;
  readonly logger: Logger;
  /** Epoch milliseconds now, from the injected clock. */
  readonly nowMs: () => number;
  /**
   * False while MongoDB (where the servers to watch are listed) is known not to answer: rounds are skipped without a
   * log line each (the service kit logs the outage once). Always true when absent.
   */
  readonly storeAvailable?: () => boolean;
}

/** A running watch. */
export interface Watcher {
  /** Runs a round now rather than at the next interval. */
  wake(): void;
  /** Ends the watch: waits for the round in progress, closes watched sessions and gives the leases up. */
  stop(): Promise<void>;
}

interface Held {
  server: McpServer;
  unsubscribe: (() => void) | undefined;
  lastDiscoveryMs: number;
  listChanged: boolean;
}

/** Starts the watch loop (see the module comment). */
export function startWatcher(context: RegistryContext, options: WatcherOptions): Watcher {
  const { logger } = options;
  const lifetime = new AbortController();
  const held = new Map<string, Held>();
  let wakeUp: () => void = () => undefined;
  const actor = `svc:registry/${options.instanceId}`;
  const who = (): Actor => ({ actor, at: context.now() });

  const drop = async (serverId: string) => {
    const entry = held.get(serverId);
    if (entry === undefined) return;
    held.delete(serverId);
    entry.unsubscribe?.();
    await context.mcp.release(entry.server).catch(() => undefined);
  };

  const check = async (server: McpServer, signal: AbortSignal) => {
    let entry = held.get(server.serverId);
    if (entry === undefined) {
      const fresh: Held = { server, unsubscribe: undefined, lastDiscoveryMs: 0, listChanged: false };
      held.set(server.serverId, fresh);
      fresh.unsubscribe = await context.mcp.onListChanged(server, () => {
        fresh.listChanged = true;
        wakeUp();
      });
      entry = fresh;
    }
    entry.server = server;
    const log = logger.child({ serverId: server.serverId, tenant: server.tenant, workspace: server.workspace });

    // An expired authentication exception takes an Active remote server out of service.
    const authChecked = await changeServer(context, server, server.serverId, (s) => (s.state === 'Active' ? [{ type: 'CheckAuthentication', at: context.now() }] : []), who(), signal);
    if (authChecked.events.length > 0) {
      log.warn({ state: authChecked.server.state }, 'authentication no longer acceptable');
      await syncDescriptorHealth(context, authChecked, who(), signal);
    }
    // The read model that named this server may lag its record: only a server the record says is watched is checked.
    if (authChecked.server.state !== 'Active' && authChecked.server.state !== 'Degraded') return;

    let outcome: { ok: true } | { ok: false; error: string };
    try {
      await context.mcp.ping(authChecked.server, AbortSignal.any([signal, AbortSignal.timeout(options.healthTimeoutMs)]));
      outcome = { ok: true };
    } catch (error) {
      if (signal.aborted) return;
      outcome = { ok: false, error: error instanceof Error ? error.message : String(error) };
    }
    const at = context.now();
    const recorded = await changeServer(
      context,
      server,
      server.serverId,
      (s) => (s.state === 'Active' || s.state === 'Degraded' ? [{ type: 'RecordHealthCheck', outcome, failureThreshold: context.failureThreshold, at }] : []),
      { actor, at },
      signal,
    );
    const transition = recorded.events.find((event) => event.type === 'ServerStateChanged');
    if (transition !== undefined) {
      log.warn({ from: transition.from, to: transition.to, error: outcome.ok ? undefined : outcome.error }, 'server state changed by health check');
      await syncDescriptorHealth(context, recorded, who(), signal);
    }
    entry.server = recorded.server;

    const now = options.nowMs();
    const due = entry.listChanged || transition?.to === 'Active' || now - entry.lastDiscoveryMs >= options.discoveryIntervalMs;
    if (!outcome.ok || !due || recorded.server.state === 'Retired') return;
    entry.listChanged = false;
    entry.lastDiscoveryMs = now;
    try {
      const found = await context.mcp.rediscover(recorded.server, AbortSignal.any([signal, AbortSignal.timeout(options.healthTimeoutMs * 4)]));
      const { changes } = await recordDiscovery(context, server, server.serverId, found, who(), signal);
      for (const change of changes) log.warn({ toolName: change.toolName, change: change.change, toolId: change.toolId, toolVersion: change.toolVersion }, 'bound tool definition changed; descriptor deactivated');
    } catch (error) {
      // A discovery that fails is retried at the next round; the health check decides about the server's state.
      entry.lastDiscoveryMs = 0;
      if (!signal.aborted) log.warn({ err: error }, 're-discovery failed');
    }
  };

  const round = async (signal: AbortSignal) => {
    // A Local provider (the reserved provider of flow-backed tools) is inside Toolplane: nothing to ping or discover.
    const watched = (await context.readModels.servers.raw.find({ state: { $in: ['Active', 'Degraded'] }, transport: { $ne: 'Local' } }, { signal }).toArray()).map((document) => McpServer.parse(document));
    const mine: McpServer[] = [];
    for (const server of watched) {
      if (await claimLease(options.leases, server.serverId, options.instanceId, options.leaseMs, options.nowMs(), signal)) mine.push(server);
      else await drop(server.serverId);
    }
    const watchedIds = new Set(mine.map((server) => server.serverId));
    for (const serverId of [...held.keys()]) if (!watchedIds.has(serverId)) await drop(serverId);
    for (let i = 0; i < mine.length; i += options.concurrency) {
      await Promise.all(
        mine.slice(i, i + options.concurrency).map((server) =>
          check(server, signal).catch((error: unknown) => {
            if (!signal.aborted) logger.error({ err: error, serverId: server.serverId }, 'watching a server failed');
          }),
        ),
      );
    }
  };

  const running = (async () => {
    const signal = lifetime.signal;
    while (!signal.aborted) {
      try {
        if (options.storeAvailable?.() !== false) await round(signal);
      } catch (error) {
        if (!signal.aborted) logger.error({ err: error }, 'watch round failed');
      }
      // Stopped during the round (a read waiting for MongoDB, say): an abort listener added now would never fire.
      if (signal.aborted) break;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, options.healthIntervalMs);
        function done() {
          clearTimeout(timer);
          signal.removeEventListener('abort', done);
          wakeUp = () => undefined;
          resolve();
        }
        wakeUp = done;
        signal.addEventListener('abort', done, { once: true });
      });
    }
  })();

  return {
    wake: () => wakeUp(),
    async stop() {
      lifetime.abort();
      await running;
      for (const serverId of [...held.keys()]) {
        await drop(serverId);
        await releaseLease(options.leases, serverId, options.instanceId).catch(() => undefined);
      }
    },
  };
}
