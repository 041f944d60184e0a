import type { Scope } from './primitives.js';

// The descriptor read model: the registry writes every ToolDescriptor version to a NATS KV bucket, so the tool
// adapter resolves descriptors from a local watched copy instead of asking the registry on every invocation.

/** The KV bucket holding one entry per ToolDescriptor version (active or not); written only by the registry. */
export const DESCRIPTOR_BUCKET = 'TOOLPLANE_DESCRIPTORS';

/**
 * The bucket's settings, which the writer and every reader must open it with (a bucket opened with other settings
 * is refused): one entry per descriptor version, latest value only. A deactivated version is written as inactive,
 * not deleted, so a reader can tell "suspended" from "unknown".
 */
export const descriptorBucketSettings = {
  name: DESCRIPTOR_BUCKET,
  description: 'ToolDescriptor versions by tenant, workspace, tool id and version; written by the registry.',
  history: 1,
  storage: 'file',
} as const;

/** Orders descriptor versions oldest first: numeric versions by number, before and then any others by text. */
export function compareToolVersions(a: { readonly toolVersion: string }, b: { readonly toolVersion: string }): number {
  const numeric = (v: string) => (/^\d{1,9}$/.test(v) ? Number(v) : -1);
  return numeric(a.toolVersion) - numeric(b.toolVersion) || a.toolVersion.localeCompare(b.toolVersion);
}

/**
 * A value as one token of a KV key: base64url, which has no `.` and only characters keys allow, so ids that may
 * contain dots, `+`, `:` or `@` neither collide nor split a key.
 */
export function kvKeyToken(value: string): string {
  return Buffer.from(value, 'utf8').toString('base64url');
}

/** The bucket key of one descriptor version: `{tenant}.{workspace}.{b64url(toolId)}.{b64url(toolVersion)}`. */
export function descriptorKey(scope: Scope, toolId: string, toolVersion: string): string {
  return `${scope.tenant}.${scope.workspace}.${kvKeyToken(toolId)}.${kvKeyToken(toolVersion)}`;
}

/** A key filter over the descriptors of one scope (or of every scope when none is given). */
export function descriptorKeyFilter(scope?: Scope): string {
  return scope === undefined ? '>' : `${scope.tenant}.${scope.workspace}.>`;
}
