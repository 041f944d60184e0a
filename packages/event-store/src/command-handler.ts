import { ToolplaneError } from '@toolplane/contracts';
import { foldEvents, type Decider } from './decider.js';
import { isVersionConflict, type EventStore } from './event-store.js';

/** What handling a command did: the events it appended (none when the decision was to do nothing) and the result. */
export interface HandledCommand<State, Event> {
  readonly newEvents: readonly Event[];
  readonly newState: State;
  /** The stream's version after the command: the expected version of the next append. */
  readonly nextExpectedVersion: number;
}

/** Options of one command. */
export interface HandleOptions {
  /** Decisions tried against a stream another writer keeps moving on before giving up (default 5). */
  readonly maxAttempts?: number;
  readonly signal?: AbortSignal;
}

/**
 * A command that must be prepared from the state it is decided on (e.g. a secret encrypted for the next generation):
 * prepared again, with the state that won, after a lost race.
 */
export type PreparedCommand<State, Command> = (state: State) => Command;

/**
 * The one command handler: reads the aggregate's events, folds them, decides, and appends what was decided at the
 * version it read. A lost race (another writer appended first) is decided again against what won, so a decision is
 * always made on the state it is stored after. A stream that keeps moving for `maxAttempts` decisions is
 * TEMPORARY_UNAVAILABLE (retryable).
 */
export async function handleCommand<State, Command, Event>(
  store: EventStore<Event>,
  decider: Decider<State, Command, Event>,
  streamId: string,
  command: Command,
  options: HandleOptions = {},
): Promise<HandledCommand<State, Event>> {
  return handlePreparedCommand(store, decider, streamId, () => command, options);
}

/** handleCommand for a command prepared from the state it is decided on (prepared again after a lost race). */
export async function handlePreparedCommand<State, Command, Event>(
  store: EventStore<Event>,
  decider: Decider<State, Command, Event>,
  streamId: string,
  prepare: PreparedCommand<State, Command>,
  options: HandleOptions = {},
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
