import { z } from 'zod';
import { McpServerRecord, ReleaseRecord, ServerNameRecord, ToolDescriptorRecord, deadLetterSubject, parseRegistrySubject, registryStream } from '@toolplane/contracts';
import { foldEvents } from '@toolplane/event-store';
import { consume, type ConsumerDiagnostic, type ConsumerHandle, type ConsumerSpec, type DeliveryContext, type Messaging } from '@toolplane/messaging';
import { descriptorAppendEvents, serverAppendEvents, serverAt } from '../app/aggregates.js';
import { readReleaseAt, releaseAppendEvents } from '../app/release-commands.js';
import type { RegistryContext } from '../app/registry-context.js';
import { descriptorDocumentId, nameClaimOf } from '../collections.js';
import { descriptorDecider } from '../core/descriptor-aggregate.js';
import { serverDecider } from '../core/server-aggregate.js';

// Two durable consumers of the registry's stream, each folding an appended aggregate from the record (so a
// redelivered, duplicated or late message writes the aggregate as it is, and changes nothing the second time):
// - the publisher derives the public lifecycle events of every append (ids from the aggregate and the append's
//   sequence, so what a command handler published already is dropped as a duplicate) and writes descriptors to the
//   KV read model: what a crash between an append and its publication left unpublished is published here;
// - the read-model projector writes each server and descriptor version whole, by `_id`, into MongoDB.
// Both take one message at a time across all replicas (max one unacknowledged), so each document has one writer and
// an aggregate's appends are written in order.

/** The publisher's durable consumer. */
export const publisherConsumer: ConsumerSpec = {
  durableName: 'registry-publisher',
  description: 'Publishes the lifecycle events and descriptor read model of every registry append.',
  maxAckPending: 1,
};

/** The read-model projector's durable consumer. */
export const readModelConsumer: ConsumerSpec = {
  durableName: 'registry-read-models',
  description: 'Folds the registry stream into the mcp_servers and tool_descriptors read models.',
  maxAckPending: 1,
};

// The form the event store appends: the events of one decision. Any registry record; the subject says which kind.
const RegistryAppend = z.object({ events: z.array(z.union([McpServerRecord, ToolDescriptorRecord, ServerNameRecord, ReleaseRecord])).min(1) });
type RegistryAppend = z.infer<typeof RegistryAppend>;

// A read model that cannot be written (the store is down) is retried with backoff for as long as that lasts.
const maxDeliver = 10_000;

async function readServerAt(context: RegistryContext, streamId: string, signal: AbortSignal) {
  const stored = await context.stores.servers.readStream(streamId, { signal });
  return serverAt(foldEvents(serverDecider, stored.events), stored.version);
}

async function readDescriptorAt(context: RegistryContext, streamId: string, signal: AbortSignal) {
  const stored = await context.stores.descriptors.readStream(streamId, { signal });
  const descriptor = foldEvents(descriptorDecider, stored.events);
  return descriptor === undefined ? undefined : { ...descriptor, version: stored.version };
}

function publish(context: RegistryContext) {
  return async (message: RegistryAppend, delivery: DeliveryContext): Promise<void> => {
    const target = parseRegistrySubject(delivery.subject);
    if (target?.kind === 'server') {
      const server = await readServerAt(context, target.streamId, delivery.signal);
      if (server !== undefined) await context.publishEvents(serverAppendEvents(server, message.events as McpServerRecord[], delivery.streamSequence), delivery.signal);
    } else if (target?.kind === 'descriptor') {
      const descriptor = await readDescriptorAt(context, target.streamId, delivery.signal);
      if (descriptor === undefined) return;
      await context.publishEvents(descriptorAppendEvents(descriptor, message.events as ToolDescriptorRecord[], delivery.streamSequence), delivery.signal);
      await context.publishDescriptor(descriptor, delivery.signal);
    } else if (target?.kind === 'release') {
      const { release } = await readReleaseAt(context, target.streamId, delivery.signal);
      if (release !== undefined) await context.publishEvents(releaseAppendEvents(release, message.events as ReleaseRecord[], delivery.streamSequence), delivery.signal);
    }
  };
}

function project(context: RegistryContext) {
  return async (_message: RegistryAppend, delivery: DeliveryContext): Promise<void> => {
    const target = parseRegistrySubject(delivery.subject);
    if (target?.kind === 'server') {
      const server = await readServerAt(context, target.streamId, delivery.signal);
      if (server === undefined) return;
      await context.readModels.servers.raw.replaceOne({ _id: server.serverId }, { ...server, nameClaim: nameClaimOf(server) }, { upsert: true });
    } else if (target?.kind === 'descriptor') {
      const descriptor = await readDescriptorAt(context, target.streamId, delivery.signal);
      if (descriptor === undefined) return;
      const _id = descriptorDocumentId(descriptor);
      await context.readModels.descriptors.raw.replaceOne({ _id }, descriptor, { upsert: true });
    }
  };
}

/** Starts the publisher and the read-model projector; stop the handles to drain them. */
export async function startRegistryProjection(
  messaging: Messaging,
  context: RegistryContext,
  options: { readonly signal?: AbortSignal; readonly onDiagnostic?: (consumer: string, diagnostic: ConsumerDiagnostic) => void },
): Promise<ConsumerHandle[]> {
  const start = (spec: ConsumerSpec, handler: (message: RegistryAppend, delivery: DeliveryContext) => Promise<void>) =>
    consume(messaging, {
      stream: registryStream.name,
      consumer: spec.durableName,
      schema: RegistryAppend,
      handler,
      deadLetterSubject: deadLetterSubject(registryStream.name, spec.durableName),
      maxDeliver,
      ...(options.signal === undefined ? {} : { signal: options.signal }),
      onDiagnostic: (diagnostic) => options.onDiagnostic?.(spec.durableName, diagnostic),
    });
  return [await start(publisherConsumer, publish(context)), await start(readModelConsumer, project(context))];
}
