import { ToolplaneError } from '@toolplane/contracts';
import { foldEvents, isVersionConflict, type Decider, type EventStore, type HandledCommand } from '@toolplane/event-store';

/**
 * handleCommand for a command that must be prepared from the state it is decided on: a credential encrypted for the
 * next secret generation, a secret rewrapped from the one stored. Reads, folds, prepares, decides and appends at the
 * version read; a lost race prepares and decides again against what won.
 */
export async function handlePreparedCommand<State, Command, Event>(
  store: EventStore<Event>,
  decider: Decider<State, Command, Event>,
  streamId: string,
  prepare: (state: State) => Command,
  options: { readonly signal?: AbortSignal; readonly maxAttempts?: number } = {},
): Promise<HandledCommand<State, Event>> {
  const maxAttempts = options.maxAttempts ?? 5;
  const signal = options.signal === undefined ? {} : { signal: options.signal };
  for (let attempt = 1; ; attempt += 1) {
    const stored = await store.readStream(streamId, signal);
    const state = foldEvents(decider, stored.events);
    const newEvents = decider.decide(prepare(state), state);
    if (newEvents.length === 0) return { newEvents, newState: state, nextExpectedVersion: stored.version };
    try {
      const appended = await store.appendToStream(streamId, newEvents, { expectedVersion: stored.version, ...signal });
      return { newEvents, newState: newEvents.reduce((folded, event) => decider.evolve(folded, event), state), nextExpectedVersion: appended.nextExpectedVersion };
    } catch (error) {
      if (!isVersionConflict(error)) throw error;
      if (attempt >= maxAttempts) throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `stream ${streamId} kept changing while a command was decided (${attempt} attempts)`, { cause: error });
    }
  }
}
