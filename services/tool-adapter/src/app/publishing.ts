import { z } from 'zod';
import { InvocationReply, eventMsgId, invocationReplySubject, subjectOfEvent, type Scope } from '@toolplane/contracts';
import { publish, type Messaging } from '@toolplane/messaging';
import type { PipelineEvent } from '../core/invocation-event-log.js';

// The events the core built from validated parts are already in LifecycleEvent's form, field order included (a unit
// test of the handler holds it to that): they are encoded as they are instead of being validated again on every
// publish (five per call). What arrives from outside is validated where it arrives.
const BuiltEvent = z.custom<PipelineEvent>();

/**
 * Publishes events pipelined (all sent at once, in order, each with its deterministic Nats-Msg-Id, so a republished
 * event is dropped as a duplicate); resolves once every one is stored, and fails if any is not.
 */
export async function publishEvents(messaging: Messaging, events: readonly PipelineEvent[], signal?: AbortSignal): Promise<void> {
  await Promise.all(events.map((event) => publish(messaging, { subject: subjectOfEvent(event), schema: BuiltEvent, message: event, msgId: eventMsgId(event), ...(signal ? { signal } : {}) })));
}

/**
 * Sends a reply to the runtime's inbox (core NATS: a reply is not kept; the receipt is, in the call's record). A
 * result is the core's own (invocationResultOf, in the contract's form like the events); an error is checked.
 */
export function sendReply(messaging: Messaging, scope: Scope, replyInbox: string | undefined, reply: InvocationReply): void {
  if (replyInbox === undefined) return;
  messaging.connection.publish(invocationReplySubject(scope, replyInbox), JSON.stringify(reply.ok ? reply : InvocationReply.parse(reply)));
}

/** Where the invocation handlers send what leaves the adapter: lifecycle events and replies. */
export interface InvocationOutlet {
  /** Publishes events pipelined; resolves once all are stored (see publishEvents). */
  publish(events: readonly PipelineEvent[], signal?: AbortSignal): Promise<void>;
  /** Sends a reply (nothing when there is no inbox). */
  reply(scope: Scope, replyInbox: string | undefined, reply: InvocationReply): void;
}

/** The outlet on NATS: events to JetStream, replies on core NATS. */
export function natsOutlet(messaging: Messaging): InvocationOutlet {
  return {
    publish: (events, signal) => publishEvents(messaging, events, signal),
    reply: (scope, replyInbox, reply) => sendReply(messaging, scope, replyInbox, reply),
  };
}
