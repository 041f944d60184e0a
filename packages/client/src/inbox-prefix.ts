import { SUBJECT_TOKEN_PATTERN, ToolplaneError, type Scope } from '@toolplane/contracts';

/**
 * The inbox prefix a client of `scope` uses by default: `_INBOX_<tenant>.<workspace>`. Replies to its requests and
 * JetStream acknowledgements of its publishes arrive under it, so an operator can allow a tenant's runtimes to
 * subscribe to `_INBOX_<tenant>.>` (or one workspace's to `_INBOX_<tenant>.<workspace>.>`) instead of the shared
 * `_INBOX.>`. Deterministic: tenant and workspace ids are subject tokens, and `_INBOX_<tenant>` is a single token
 * that no other tenant's prefix (nor NATS's own `_INBOX`) can equal.
 */
export function defaultInboxPrefix(scope: Scope): string {
  for (const [what, value] of [
    ['tenant', scope.tenant],
    ['workspace', scope.workspace],
  ] as const) {
    if (!SUBJECT_TOKEN_PATTERN.test(value)) throw new ToolplaneError('INVALID_ARGUMENT', `${what} ${JSON.stringify(value)} is not a subject token: letters, digits, _ or -, 1-64 characters`);
  }
  return `_INBOX_${scope.tenant}.${scope.workspace}`;
}
