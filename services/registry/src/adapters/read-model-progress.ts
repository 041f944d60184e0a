import { sleep } from '@toolplane/contracts';
import { consumerProgress, streamPosition, type Messaging } from '@toolplane/messaging';

/**
 * Waits until a durable consumer has acknowledged everything its stream held when the wait began (at most
 * `timeoutMs`; then it resolves anyway: a read model a little behind is still an answer). A list query that waits
 * for it first sees every change committed before it was asked.
 */
export function readModelCatchUp(messaging: Messaging, stream: string, consumer: string, timeoutMs: number): (signal?: AbortSignal) => Promise<void> {
  return async (signal) => {
    const { lastSequence } = await streamPosition(messaging, stream, signal);
    const deadline = Date.now() + timeoutMs;
    let pauseMs = 2;
    while ((await consumerProgress(messaging, stream, consumer, signal)).ackFloor < lastSequence && Date.now() < deadline) {
      await sleep(pauseMs, signal, `waiting for ${consumer} to catch up`);
      pauseMs = Math.min(pauseMs * 2, 50);
    }
  };
}
