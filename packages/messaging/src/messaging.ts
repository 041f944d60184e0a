import type { NatsConnection } from '@nats-io/nats-core';
import type { JetStreamClient, JetStreamManager } from '@nats-io/jetstream';
import type { StreamPublisher } from './stream-publisher.js';

/** How a consumer or responder stops. */
export interface StopOptions {
  /** How long in-flight handlers may run on before their AbortSignal aborts; default 0 (abort at once). */
  readonly graceMs?: number;
}

/** A running consumer or responder: what Messaging.drain() stops before draining the connection. */
export interface Stoppable {
  /** Stops taking work, aborts in-flight handlers after the grace period, and resolves once they settled. */
  stop(options?: StopOptions): Promise<void>;
}

/** A connection to NATS with its JetStream client and manager; made by connectMessaging. */
export interface Messaging {
  readonly connection: NatsConnection;
  readonly jetstream: JetStreamClient;
  readonly manager: JetStreamManager;
  /** The connection's JetStream publisher, through which publish() and appendToSubject() send. */
  readonly publisher: StreamPublisher;
  /** The server list without credentials, for logs and messages. */
  readonly url: string;
  /** Replicas of every stream and bucket declared through this connection whose spec names none (1 on one server, 3 on a cluster). */
  readonly streamReplicas: number;
  /** Whether the connection is currently up (false while reconnecting, draining or closed). */
  isConnected(): boolean;
  /** Registers a consumer or responder so drain() stops it first; returns a function that unregisters it. */
  track(resource: Stoppable): () => void;
  /** Stops every tracked consumer and responder (waiting for their handlers), then drains and closes the connection. */
  drain(options?: StopOptions): Promise<void>;
  /** Closes at once: in-flight handlers are aborted and their messages redelivered later. */
  close(): Promise<void>;
  /** Resolves (never rejects) when the connection has closed, with the error that closed it, if any. */
  closed(): Promise<Error | undefined>;
}
