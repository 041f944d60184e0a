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
} as const;
