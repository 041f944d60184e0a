import { z } from 'zod';

/** The states of a registered MCP server. */
export const McpServerState = z.enum(['Registered', 'Verified', 'Active', 'Degraded', 'Retired']);
export type McpServerState = z.infer<typeof McpServerState>;

/** Whether Toolplane consumes the server's tools or publishes its own tools through it. */
export const McpDirection = z.enum(['Consumed', 'Published']);
export type McpDirection = z.infer<typeof McpDirection>;

/**
 * How Toolplane reaches the server: a spawned stdio command, a Streamable HTTP endpoint, or Local: a provider inside
 * Toolplane itself (the reserved provider of flow-backed tools), with no endpoint and no command, never connected to.
 */
export const McpTransport = z.enum(['Stdio', 'StreamableHttp', 'Local']);
export type McpTransport = z.infer<typeof McpTransport>;

/**
 * How the server authenticates Toolplane. A server reachable beyond the local process becomes Active only with
 * OAuth2ProtectedResource or WorkloadIdentity, or with `None` plus a recorded, expiring admin exception.
 */
export const McpAuthentication = z.enum(['None', 'OAuth2ProtectedResource', 'WorkloadIdentity']);
export type McpAuthentication = z.infer<typeof McpAuthentication>;

/** A server's name, unique per workspace; the first segment of the ids of the tools bound from it. */
export const McpServerName = z.string().regex(/^[A-Za-z0-9_-]{1,64}$/);
export type McpServerName = z.infer<typeof McpServerName>;

/** A tool's name as its MCP server lists it: whatever the server says, bounded. */
export const McpToolName = z.string().min(1).max(256);
export type McpToolName = z.infer<typeof McpToolName>;
