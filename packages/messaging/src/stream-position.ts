import { raceAbort } from '@toolplane/contracts';
import { apiErrorCodes } from './declare.js';
import type { Messaging } from './messaging.js';
import { isApiError, toToolplaneError } from './nats-errors.js';

/** Where a stream begins and ends: its first and last stored sequence and how many messages it holds. */
export interface StreamPosition {
  readonly firstSequence: number;
  readonly lastSequence: number;
  readonly messages: number;
}

/** How far a durable consumer has got through its stream. */
export interface ConsumerProgress {
  /** Every message up to this stream sequence has been acknowledged (or terminated). */
  readonly ackFloor: number;
  /** The highest stream sequence delivered so far. */
  readonly delivered: number;
  /** Messages matching the consumer not delivered yet. */
  readonly pending: number;
  /** Messages delivered and not yet acknowledged. */
  readonly ackPending: number;
  /** Messages delivered more than once and not acknowledged yet. */
  readonly redelivered: number;
}

/** The current first and last sequence of a stream; NOT_FOUND when there is no such stream. */
export async function streamPosition(m: Messaging, stream: string, signal?: AbortSignal): Promise<StreamPosition> {
  const what = `reading the state of stream ${stream}`;
  try {
    const info = await raceAbort(m.manager.streams.info(stream), signal, what);
    return { firstSequence: info.state.first_seq, lastSequence: info.state.last_seq, messages: info.state.messages };
  } catch (error) {
    throw toToolplaneError(error, what);
  }
}

/** The progress of a durable consumer; NOT_FOUND when it does not exist. */
export async function consumerProgress(m: Messaging, stream: string, consumer: string, signal?: AbortSignal): Promise<ConsumerProgress> {
  const what = `reading the progress of consumer ${consumer} on stream ${stream}`;
  try {
    const info = await raceAbort(m.manager.consumers.info(stream, consumer), signal, what);
    return { ackFloor: info.ack_floor.stream_seq, delivered: info.delivered.stream_seq, pending: info.num_pending, ackPending: info.num_ack_pending, redelivered: info.num_redelivered };
  } catch (error) {
    throw toToolplaneError(error, what);
  }
}

/** Deletes a durable consumer (its acknowledgement state goes with it); resolves false when it did not exist. */
export async function deleteConsumer(m: Messaging, stream: string, consumer: string, signal?: AbortSignal): Promise<boolean> {
  const what = `deleting consumer ${consumer} on stream ${stream}`;
  try {
    return await raceAbort(m.manager.consumers.delete(stream, consumer), signal, what);
  } catch (error) {
    if (isApiError(error, apiErrorCodes.consumerNotFound)) return false;
    throw toToolplaneError(error, what);
  }
}
