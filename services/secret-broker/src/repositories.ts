import { ConnectionSummary, SecretLease, ToolplaneError } from '@toolplane/contracts';

// Read-model documents checked against their contracts (which drops `_id`).

/** A connection summary of the read model. */
export function parseSummary(document: unknown): ConnectionSummary {
  const { _id, ...rest } = document as Record<string, unknown>;
  const parsed = ConnectionSummary.safeParse(rest);
  if (!parsed.success) throw new ToolplaneError('INTERNAL', 'a connection of the read model does not match its contract');
  return parsed.data;
}

/** A lease of the read model. */
export function parseLease(document: unknown): SecretLease {
  const parsed = SecretLease.safeParse(document);
  if (!parsed.success) throw new ToolplaneError('INTERNAL', 'a lease of the read model does not match its contract');
  return parsed.data;
}
