import type { CollectionDefinition } from '@toolplane/store';

// The tool adapter keeps no MongoDB collection: its ToolInvocation aggregate lives on its private stream
// (adapters/invocation-store.ts), agent profiles, tenant policies and rate counters in JetStream KV buckets.

/** Every collection the tool-adapter service owns: none. */
export const collections: readonly CollectionDefinition[] = [];
