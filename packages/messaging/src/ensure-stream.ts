import { JetStreamApiError, type StreamInfo } from '@nats-io/jetstream';
import { raceAbort, ToolplaneError } from '@toolplane/contracts';
import { apiErrorCodes, type DeclareOptions, type EnsureResult } from './declare.js';
import type { Messaging } from './messaging.js';
import { isApiError, toToolplaneError } from './nats-errors.js';
import { replicaReductionError, streamConfigDiff, toStreamConfig, type StreamSpec } from './stream-spec.js';

/**
 * Declares a stream idempotently: creates it, or updates the settings that differ from the spec. It never
 * deletes a stream or its messages; a change the server refuses (e.g. retention to or from workqueue)
 * fails with CONFLICT and leaves the stream as it was. A spec without `replicas` takes the connection's
 * `streamReplicas`; a declaration with fewer replicas than the stream has fails with CONFLICT too (it never
 * scales a stream down), while more replicas scale it up.
 */
export async function ensureStream(m: Messaging, spec: StreamSpec, options: DeclareOptions = {}): Promise<EnsureResult> {
  const what = `declaring stream ${spec.name}`;
  try {
    return await raceAbort(declareStream(m, spec), options.signal, what);
  } catch (error) {
    throw toToolplaneError(error, what);
  }
}

async function declareStream(m: Messaging, spec: StreamSpec): Promise<EnsureResult> {
  const desired = toStreamConfig(spec.replicas === undefined ? { ...spec, replicas: m.streamReplicas } : spec);
  let current = await streamInfo(m, spec.name);
  if (current === undefined) {
    try {
      // Creating with a config identical to an existing stream's succeeds: two replicas may race here.
      await m.manager.streams.add(desired);
      return { action: 'created', changed: [] };
    } catch (error) {
      if (!isApiError(error, apiErrorCodes.streamNameInUse)) throw error;
      current = await streamInfo(m, spec.name);
      if (current === undefined) throw error;
    }
  }
  const changed = streamConfigDiff(desired, current.config);
  if (changed.length === 0) return { action: 'unchanged', changed };
  const reduction = replicaReductionError(spec.name, desired.num_replicas ?? 1, current.config.num_replicas);
  if (reduction !== undefined) throw reduction;
  try {
    await m.manager.streams.update(spec.name, desired);
  } catch (error) {
    if (error instanceof JetStreamApiError && error.status !== 503 && error.status !== 408) {
      throw new ToolplaneError('CONFLICT', `stream ${spec.name} cannot be changed (${changed.join(', ')}): ${error.message}`, { cause: error });
    }
    throw error;
  }
  return { action: 'updated', changed };
}

async function streamInfo(m: Messaging, name: string): Promise<StreamInfo | undefined> {
  try {
    return await m.manager.streams.info(name);
  } catch (error) {
    if (isApiError(error, apiErrorCodes.streamNotFound)) return undefined;
    throw error;
  }
}
