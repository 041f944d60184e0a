/** What ensureStream or ensureConsumer did, for the service to log. */
export interface EnsureResult {
  readonly action: 'created' | 'updated' | 'unchanged';
  /** The settings that were changed (empty unless updated). */
  readonly changed: readonly string[];
}

/** Options of ensureStream and ensureConsumer. */
export interface DeclareOptions {
  readonly signal?: AbortSignal;
}

/** JetStream API error codes this package reacts to. */
export const apiErrorCodes = {
  consumerNotFound: 10014,
  streamNameInUse: 10058,
  streamNotFound: 10059,
  consumerAlreadyExists: 10148,
  /** "no message found": a get of a message that is not there. */
  noMessageFound: 10037,
  /** "JetStream not enabled for account": nats.js raises the same error as for no responders. */
  jetStreamNotEnabledForAccount: 10039,
  /** "wrong last sequence": an expected-sequence header (an append's, a KV update's revision) no longer holds. */
  wrongLastSequence: 10071,
} as const;
