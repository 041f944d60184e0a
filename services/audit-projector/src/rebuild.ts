// `projector rebuild`: replays the events stream from its first sequence into a fresh generation of the
// rebuildable projections while the live consumer goes on folding into the current one, then switches.
//
// Why nothing is lost: every event the live consumer acknowledged before the switch has a stream sequence at
// most the stream's last sequence read right after the switch (S); the rebuild keeps folding until it has
// acknowledged everything up to S, so all of those are in the new generation. A live batch that straddles the
// switch re-reads the pointer after writing and writes into the new generation too, and later batches read
// the new pointer first. Events folded by both are harmless: the folds are idempotent.
import { ToolplaneError, sleep, streams, type ProjectionGenerations } from '@toolplane/contracts';
import { consumerProgress, deleteConsumer, ensureConsumer, streamPosition, type ConsumerSpec, type Messaging } from '@toolplane/messaging';
import type { Store } from '@toolplane/store';
import { CallWriter } from './call-writer.js';
import { ensureQueryIndexes } from './collections.js';
import type { Generations } from './generations.js';
import { startProjectionConsumer, type ProjectionConsumer, type ProjectionConsumerOptions } from './projection-consumer.js';

/** What a rebuild runs with. */
export interface RebuildOptions {
  readonly messaging: Messaging;
  readonly store: Store;
  /** The pointer a rebuild moves (compare-and-set in JetStream, so one rebuild runs across replicas). */
  readonly generations: Generations;
  /** Names this replica in the pointer, so another cannot mistake its rebuild for its own. */
  readonly holder: string;
  readonly now: () => Date;
  /** How often progress is checked and the heartbeat written. */
  readonly pollMs: number;
  /** A running rebuild whose heartbeat is older than this is taken to be dead and may be replaced. */
  readonly staleMs: number;
  /** How the replay consumes (batching, retries); the stream, consumer, writers and target are the rebuild's. */
  readonly consumer: Omit<ProjectionConsumerOptions, 'messaging' | 'stream' | 'consumer' | 'writers' | 'target' | 'signal'>;
  /** The durable consumer a rebuild into a generation replays the stream with (from its first sequence). */
  readonly consumerSpec: (generation: number) => ConsumerSpec;
  readonly onFailure?: (error: unknown) => void;
}

/**
 * Starts and runs rebuilds; at most one runs in this process, and the pointer allows one across replicas. The replay
 * consumer is pinned like the live one, so a rebuild's generation has a single writer too.
 */
export class RebuildManager {
  private running: { readonly generation: number; readonly stop: AbortController; readonly done: Promise<void> } | undefined;

  constructor(private readonly options: RebuildOptions) {}

  /** Starts a rebuild into a fresh generation; CONFLICT while another one is running. Returns the pointer. */
  async start(signal?: AbortSignal): Promise<ProjectionGenerations> {
    const { store, messaging, generations, holder, now } = this.options;
    if (this.running) throw new ToolplaneError('CONFLICT', `a rebuild into generation ${this.running.generation} is running`);
    let generation = 0;
    let abandoned: number | undefined;
    const startedAt = now().toISOString();
    const pointer = await generations.update(
      (current) => {
        const rebuild = current.rebuild;
        if (rebuild?.state === 'Running') {
          if (now().getTime() - Date.parse(rebuild.heartbeatAt) < this.options.staleMs) {
            throw new ToolplaneError('CONFLICT', `a rebuild into generation ${rebuild.generation} is running (since ${rebuild.startedAt})`);
          }
          abandoned = rebuild.generation;
        }
        generation = Math.max(current.live, current.previous ?? 0, rebuild?.generation ?? 0) + 1;
        return { rebuild: { generation, state: 'Running', startedAt, heartbeatAt: startedAt, holder } };
      },
      signal,
    );
    if (abandoned !== undefined) await deleteConsumer(messaging, streams.events.name, this.options.consumerSpec(abandoned).durableName, signal);
    try {
      await ensureQueryIndexes(store, generation);
      await ensureConsumer(messaging, streams.events.name, this.options.consumerSpec(generation), signal ? { signal } : {});
    } catch (error) {
      await this.finish(generation, 'Failed', `could not prepare the rebuild: ${error instanceof Error ? error.message : String(error)}`);
      throw error;
    }
    const stop = new AbortController();
    const done = this.run(generation, stop.signal).finally(() => {
      this.running = undefined;
    });
    this.running = { generation, stop, done };
    return pointer;
  }

  /** Stops a rebuild running here (at shutdown); it is recorded as failed and can be started again. */
  async stop(): Promise<void> {
    const running = this.running;
    if (!running) return;
    running.stop.abort(new ToolplaneError('CANCELLED', 'the replica running the rebuild is stopping'));
    await running.done;
  }

  /** Resolves when the running rebuild (if any) has ended. */
  async settled(): Promise<void> {
    await this.running?.done;
  }

  private async run(generation: number, signal: AbortSignal): Promise<void> {
    const { messaging, store, generations } = this.options;
    const consumer = this.options.consumerSpec(generation).durableName;
    let projection: ProjectionConsumer | undefined;
    try {
      projection = await startProjectionConsumer({
        ...this.options.consumer,
        messaging,
        stream: streams.events.name,
        consumer,
        // The audit chain is not rebuilt: it is appended to once, by the live projector.
        writers: { store, generations, calls: new CallWriter(store) },
        target: { kind: 'generation', generation },
      });
      let switchSequence: number | undefined;
      let nearlyThere = 0;
      for (;;) {
        await sleep(this.options.pollMs, signal, `rebuilding generation ${generation}`);
        const progress = await consumerProgress(messaging, streams.events.name, consumer);
        if (switchSequence === undefined) {
          const { lastSequence } = await streamPosition(messaging, streams.events.name);
          // Caught up; or, while events keep coming, within a batch of the end for a while: switching a little
          // early is safe, because the rebuild folds on until it has passed what was stored at the switch.
          nearlyThere = lastSequence - progress.ackFloor <= this.options.consumer.batchSize ? nearlyThere + 1 : 0;
          if (progress.ackFloor >= lastSequence || nearlyThere >= 10) {
            await this.heartbeat(generation, (current) => ({ live: generation, previous: current.live, switchedAt: this.options.now().toISOString() }));
            // Read after the switch: every event acknowledged into the old generation is at most this.
            switchSequence = (await streamPosition(messaging, streams.events.name)).lastSequence;
            await this.heartbeat(generation, () => ({ switchSequence }));
            continue;
          }
        } else if (progress.ackFloor >= switchSequence) {
          break;
        }
        await this.heartbeat(generation, () => ({}));
      }
      await projection.stop();
      projection = undefined;
      await deleteConsumer(messaging, streams.events.name, consumer);
      await this.finish(generation, 'Completed');
    } catch (error) {
      this.options.onFailure?.(error);
      await projection?.stop().catch(() => undefined);
      await deleteConsumer(messaging, streams.events.name, consumer).catch(() => false);
      await this.finish(generation, 'Failed', error instanceof Error ? error.message : String(error)).catch(() => undefined);
    }
  }

  /** Writes the heartbeat (and `more`) if this replica still owns the rebuild of `generation`; CONFLICT if not. */
  private async heartbeat(generation: number, more: (current: ProjectionGenerations) => { live?: number; previous?: number; switchedAt?: string; switchSequence?: number }): Promise<void> {
    await this.options.generations.update((current) => {
      const rebuild = current.rebuild;
      if (rebuild?.generation !== generation || rebuild.holder !== this.options.holder || rebuild.state !== 'Running') {
        throw new ToolplaneError('CONFLICT', `the rebuild into generation ${generation} was taken over`);
      }
      const { live, previous, switchedAt, switchSequence } = more(current);
      const next = { ...rebuild, heartbeatAt: this.options.now().toISOString(), ...(switchedAt ? { switchedAt } : {}), ...(switchSequence === undefined ? {} : { switchSequence }) };
      return { rebuild: next, ...(live === undefined ? {} : { live }), ...(previous === undefined ? {} : { previous }) };
    });
  }

  private async finish(generation: number, state: 'Completed' | 'Failed', message?: string): Promise<void> {
    await this.options.generations.update((current) => {
      const rebuild = current.rebuild;
      if (rebuild?.generation !== generation || rebuild.holder !== this.options.holder) return undefined;
      const at = this.options.now().toISOString();
      return { rebuild: { ...rebuild, state, heartbeatAt: at, finishedAt: at, ...(message ? { message: message.slice(0, 1000) } : {}) } };
    });
  }

  /** The pointer as the status operation shows it. */
  async status(signal?: AbortSignal): Promise<ProjectionGenerations> {
    return this.options.generations.read(signal);
  }
}
