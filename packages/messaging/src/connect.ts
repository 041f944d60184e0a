import { connect } from '@nats-io/transport-node';
import type { NatsConnection } from '@nats-io/nats-core';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { ToolplaneError, raceAbort } from '@toolplane/contracts';
import { parseNatsUrl } from './connection-url.js';
import { msgIdHeader } from './headers.js';
import type { Messaging, StopOptions, Stoppable } from './messaging.js';
import { toToolplaneError } from './nats-errors.js';
import { toMessagingStatus, type MessagingStatus } from './status.js';
import { createStreamPublisher, type StreamPublisher } from './stream-publisher.js';

/** How to reach NATS and what to report while connected. */
export interface ConnectOptions {
  /** `nats://[user:pass@]host:port` (or `tls://`), comma-separated for a cluster. */
  readonly url: string;
  /** The connection's name as the server's monitoring shows it, e.g. `toolplane-registry`. */
  readonly name: string;
  /** Called on every status change (disconnect, reconnect, errors, lame-duck mode…) for the service to log. */
  readonly onStatus?: (status: MessagingStatus) => void;
  /** Reconnect attempts per server before giving up; default -1 (forever). */
  readonly maxReconnectAttempts?: number;
  /** Pause between reconnect attempts; default 2000 ms. */
  readonly reconnectTimeWaitMs?: number;
  /** Deadline of the initial handshake and of each JetStream API request; default 10 000 ms. */
  readonly timeoutMs?: number;
  /**
   * Where replies to this connection's requests (request/reply and JetStream publish acknowledgements) arrive:
   * `<inboxPrefix>.<random>…` instead of NATS's shared `_INBOX.<random>…`, so a credential can be allowed to
   * subscribe to its own prefix only. Dot-separated tokens of letters, digits, `_` and `-` (see `inboxPrefixPattern`).
   */
  readonly inboxPrefix?: string;
  /**
   * Replicas of the streams and buckets declared through this connection (ensureStream, openKv) when their spec
   * names none: 1 (the default) on one server, 3 on a three-node cluster. Durable consumers inherit their stream's.
   */
  readonly streamReplicas?: number;
  readonly signal?: AbortSignal;
}

/** A valid inbox prefix: 1–16 dot-separated tokens of letters, digits, `_` and `-` (no wildcards, no `$`), at most 200 characters. */
export const inboxPrefixPattern = /^[A-Za-z0-9_-]+(?:\.[A-Za-z0-9_-]+){0,15}$/;

/** Returns `prefix` when it is a valid inbox prefix, else throws INVALID_ARGUMENT naming it and the rule. */
export function checkInboxPrefix(prefix: string): string {
  if (prefix.length <= 200 && inboxPrefixPattern.test(prefix)) return prefix;
  const shown = prefix.length > 80 ? `${prefix.slice(0, 80)}…` : prefix;
  throw new ToolplaneError('INVALID_ARGUMENT', `inbox prefix "${shown}" is malformed: use 1-16 dot-separated tokens of letters, digits, _ or - (at most 200 characters), e.g. _INBOX_acme`);
}

/**
 * Connects to NATS and JetStream. An unreachable server fails at once with TEMPORARY_UNAVAILABLE and a
 * malformed URL with INVALID_ARGUMENT, both naming the URL without credentials (a malformed inbox prefix is
 * INVALID_ARGUMENT too, before anything is dialled); once connected, the connection reconnects (forever, by
 * default) and reports each status change through `onStatus`.
 */
export async function connectMessaging(options: ConnectOptions): Promise<Messaging> {
  const endpoint = parseNatsUrl(options.url);
  const inboxPrefix = options.inboxPrefix === undefined ? undefined : checkInboxPrefix(options.inboxPrefix);
  const streamReplicas = checkStreamReplicas(options.streamReplicas ?? 1);
  const timeoutMs = options.timeoutMs ?? 10_000;
  const what = `connecting to NATS at ${endpoint.display}`;
  const connecting = connect({
    servers: [...endpoint.servers],
    name: options.name,
    maxReconnectAttempts: options.maxReconnectAttempts ?? -1,
    reconnectTimeWait: options.reconnectTimeWaitMs ?? 2_000,
    timeout: timeoutMs,
    waitOnFirstConnect: false,
    // Every failure is translated into the taxonomy with the operation that failed (toToolplaneError's `what`), so
    // the client's own call-site traces add nothing but cost: capturing one per request was a tenth of the tool
    // adapter's CPU on the governed path.
    noAsyncTraces: true,
    ...(inboxPrefix === undefined ? {} : { inboxPrefix }),
    ...(endpoint.tls ? { tls: {} } : {}),
    ...(endpoint.user === undefined ? {} : { user: endpoint.user, pass: endpoint.pass ?? '' }),
    ...(endpoint.token === undefined ? {} : { token: endpoint.token }),
  });
  let nc: NatsConnection;
  try {
    nc = await raceAbort(connecting, options.signal, what);
  } catch (error) {
    // Abandoned by the signal: a connection that still comes up later must not leak.
    connecting.then((late) => late.close()).catch(() => undefined);
    throw toToolplaneError(error, what);
  }
  const state = { connected: true };
  // Set once JetStream answered; a resent append refused before then fails as the server answered it.
  let jsm: JetStreamManager | undefined;
  const findAppended = async (stream: string, subject: string, after: number) => {
    const stored = await jsm?.direct.getMessage(stream, { seq: after + 1, next_by_subj: subject });
    return stored === undefined || stored === null ? undefined : { seq: stored.seq, msgId: stored.header.get(msgIdHeader) };
  };
  // nats.js's default prefix when none is configured; acknowledgements arrive under it like its own requests' replies.
  const publisher = createStreamPublisher(nc, { inboxPrefix: inboxPrefix ?? '_INBOX', timeoutMs, findAppended });
  void watchStatus(nc, state, publisher, options.onStatus);
  try {
    const manager = await raceAbort(jetstreamManager(nc, { timeout: timeoutMs }), options.signal, what);
    jsm = manager;
    return messagingHandle(nc, manager, publisher, endpoint.display, streamReplicas, state);
  } catch (error) {
    await nc.close();
    throw toToolplaneError(error, `${what}: JetStream`);
  }
}

/** JetStream keeps 1 to 5 copies of a stream. */
function checkStreamReplicas(replicas: number): number {
  if (Number.isInteger(replicas) && replicas >= 1 && replicas <= 5) return replicas;
  throw new ToolplaneError('INVALID_ARGUMENT', `stream replicas must be a whole number from 1 to 5, not ${String(replicas)}`);
}

function messagingHandle(nc: NatsConnection, manager: JetStreamManager, publisher: StreamPublisher, url: string, streamReplicas: number, state: { connected: boolean }): Messaging {
  const resources = new Set<Stoppable>();
  const closed = nc.closed().then((error) => error ?? undefined);
  let draining: Promise<void> | undefined;
  return {
    connection: nc,
    jetstream: manager.jetstream(),
    manager,
    publisher,
    url,
    streamReplicas,
    isConnected: () => state.connected && !nc.isClosed() && !nc.isDraining(),
    track(resource) {
      resources.add(resource);
      return () => resources.delete(resource);
    },
    drain(options?: StopOptions) {
      draining ??= (async () => {
        await Promise.all([...resources].map((resource) => resource.stop(options)));
        resources.clear();
        if (nc.isClosed()) return;
        try {
          await nc.drain();
        } catch (error) {
          // Lost a race with a close: the connection is down either way.
          if (!nc.isClosed()) throw toToolplaneError(error, `draining the NATS connection to ${url}`);
        }
      })();
      return draining;
    },
    async close() {
      // Handlers are aborted, not awaited: close() is the fast path; unacknowledged messages come back.
      for (const resource of resources) resource.stop().catch(() => undefined);
      resources.clear();
      if (!nc.isClosed()) await nc.close();
    },
    closed: () => closed,
  };
}

async function watchStatus(
  nc: NatsConnection,
  state: { connected: boolean },
  publisher: StreamPublisher,
  onStatus: ((status: MessagingStatus) => void) | undefined,
): Promise<void> {
  try {
    for await (const raw of nc.status()) {
      if (raw.type === 'disconnect' || raw.type === 'close') state.connected = false;
      if (raw.type === 'disconnect') publisher.disconnected();
      if (raw.type === 'reconnect') {
        state.connected = true;
        publisher.reconnected();
      }
      if (raw.type === 'error') publisher.serverError(raw.error);
      const status = toMessagingStatus(raw);
      if (status === undefined || onStatus === undefined) continue;
      try {
        onStatus(status);
      } catch {
        // A failing status sink (a logger) must not take the connection's monitoring down with it.
      }
    }
  } catch {
    // The status iterator ends with the connection; nothing is left to watch.
  }
}
