import { JetStreamApiError, type ConsumerInfo } from '@nats-io/jetstream';
import { raceAbort, ToolplaneError } from '@toolplane/contracts';
import { consumerConfigDiff, toConsumerConfig, type ConsumerSpec } from './consumer-spec.js';
import { apiErrorCodes, type DeclareOptions, type EnsureResult } from './declare.js';
import type { Messaging } from './messaging.js';
import { isApiError, toToolplaneError } from './nats-errors.js';

/**
 * Declares a durable pull consumer idempotently: creates it, or updates the settings that differ from
 * the spec. It never deletes a consumer (that would lose its acknowledgement state); a change the server
 * refuses (e.g. deliverPolicy) fails with CONFLICT.
 */
export async function ensureConsumer(m: Messaging, stream: string, spec: ConsumerSpec, options: DeclareOptions = {}): Promise<EnsureResult> {
  const what = `declaring consumer ${spec.durableName} on stream ${stream}`;
  try {
    return await raceAbort(declareConsumer(m, stream, spec), options.signal, what);
  } catch (error) {
    throw toToolplaneError(error, what);
  }
}

async function declareConsumer(m: Messaging, stream: string, spec: ConsumerSpec): Promise<EnsureResult> {
  const desired = toConsumerConfig(spec);
  let current = await consumerInfo(m, stream, spec.durableName);
  if (current === undefined) {
    try {
      // Creating with a config identical to an existing consumer's succeeds: two replicas may race here.
      await m.manager.consumers.add(stream, desired);
      return { action: 'created', changed: [] };
    } catch (error) {
      if (!isApiError(error, apiErrorCodes.consumerAlreadyExists)) throw error;
      current = await consumerInfo(m, stream, spec.durableName);
      if (current === undefined) throw error;
    }
  }
  const changed = consumerConfigDiff(desired, current.config);
  if (changed.length === 0) return { action: 'unchanged', changed };
  try {
    // update() merges into the current config: the optional fields are named explicitly so that a filter,
    // backoff or priority group the spec no longer has is removed (undefined is dropped from the request).
    await m.manager.consumers.update(stream, spec.durableName, {
      ...desired,
      filter_subject: desired.filter_subject,
      filter_subjects: desired.filter_subjects,
      backoff: desired.backoff,
      priority_groups: desired.priority_groups,
      priority_policy: desired.priority_policy,
      priority_timeout: desired.priority_timeout,
    });
  } catch (error) {
    if (error instanceof JetStreamApiError && error.status !== 503 && error.status !== 408) {
      throw new ToolplaneError('CONFLICT', `consumer ${spec.durableName} on stream ${stream} cannot be changed (${changed.join(', ')}): ${error.message}`, { cause: error });
    }
    throw error;
  }
  return { action: 'updated', changed };
}

async function consumerInfo(m: Messaging, stream: string, name: string): Promise<ConsumerInfo | undefined> {
  try {
    return await m.manager.consumers.info(stream, name);
  } catch (error) {
    if (isApiError(error, apiErrorCodes.consumerNotFound)) return undefined;
    throw error;
  }
}
