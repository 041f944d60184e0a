import type { Status } from '@nats-io/nats-core';

/** A change in the connection's state, as plain data a service can log as it is. */
export type MessagingStatus =
  | { readonly type: 'disconnect'; readonly server: string }
  | { readonly type: 'reconnecting' }
  | { readonly type: 'reconnect'; readonly server: string }
  /** The server is in lame-duck mode (shutting down); the client will move to another one. */
  | { readonly type: 'ldm'; readonly server: string }
  | { readonly type: 'error'; readonly message: string }
  | { readonly type: 'stale_connection' }
  | { readonly type: 'force_reconnect' }
  | { readonly type: 'slow_consumer'; readonly subject: string; readonly pending: number }
  | { readonly type: 'cluster_update'; readonly added: readonly string[]; readonly deleted: readonly string[] }
  | { readonly type: 'close' };

/** Maps a NATS client status to a MessagingStatus; routine pings are dropped (undefined). */
export function toMessagingStatus(status: Status): MessagingStatus | undefined {
  switch (status.type) {
    case 'disconnect':
    case 'reconnect':
    case 'ldm':
      return { type: status.type, server: status.server };
    case 'reconnecting':
    case 'close':
      return { type: status.type };
    case 'error':
      return { type: 'error', message: status.error.message };
    case 'staleConnection':
      return { type: 'stale_connection' };
    case 'forceReconnect':
      return { type: 'force_reconnect' };
    case 'slowConsumer':
      return { type: 'slow_consumer', subject: status.sub.getSubject(), pending: status.pending };
    case 'update':
      return { type: 'cluster_update', added: status.added ?? [], deleted: status.deleted ?? [] };
    case 'ping':
      return undefined;
  }
}
