/**
 * An aggregate in Emmett's shape: what it decides is pure data, so its rules are tested without any store. `decide`
 * turns a command and the current state into the events that record what happened (it throws a ToolplaneError when the
 * command is refused, and returns no events when there is nothing to do); `evolve` folds one event into the state;
 * `initialState` is the state of an aggregate with no events.
 */
export interface Decider<State, Command, Event> {
  decide(command: Command, state: State): readonly Event[];
  evolve(state: State, event: Event): State;
  initialState(): State;
}

/** The state an aggregate's events fold to, from its initial state. */
export function foldEvents<State, Event>(decider: Pick<Decider<State, never, Event>, 'evolve' | 'initialState'>, events: readonly Event[]): State {
  return events.reduce((state, event) => decider.evolve(state, event), decider.initialState());
}
