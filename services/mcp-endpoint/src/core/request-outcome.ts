// What the endpoint's request counter labels a JSON-RPC message with: its method, from a closed list, and how it was
// answered (ok, or the taxonomy code of its failure). Pure: the protocol adapter hands over the messages it got and
// the answers it sends, already parsed; nothing here reads a body again.
import { ErrorCode, mcpMetaKeys, type ErrorCode as TaxonomyCode } from '@toolplane/contracts';

/** The methods counted by name; any other (a client's typo, a method this endpoint does not serve) is `other`. */
export const mcpMethodLabels = [
  'initialize',
  'server/discover',
  'subscriptions/listen',
  'ping',
  'tools/list',
  'tools/call',
  'resources/list',
  'resources/read',
  'resources/templates/list',
  'prompts/list',
  'prompts/get',
  'completion/complete',
  'notifications/initialized',
  'notifications/cancelled',
] as const;
export type McpMethodLabel = (typeof mcpMethodLabels)[number] | 'other';

/** How a message was answered: ok, or the taxonomy code of its failure (a closed set). */
export type RequestOutcome = 'ok' | TaxonomyCode;

const known: ReadonlySet<string> = new Set(mcpMethodLabels);

/** The label of a JSON-RPC method name. */
export function methodLabel(method: unknown): McpMethodLabel {
  return typeof method === 'string' && known.has(method) ? (method as McpMethodLabel) : 'other';
}

/** JSON-RPC ids as the SDK's responses carry them back. */
export type RpcId = string | number;

/** The messages of a body (one, or a batch): the requests by id with their labels, and the notifications' labels. */
export function rpcMessagesOf(body: unknown): { readonly requests: Map<RpcId, McpMethodLabel>; readonly notifications: McpMethodLabel[] } {
  const requests = new Map<RpcId, McpMethodLabel>();
  const notifications: McpMethodLabel[] = [];
  for (const message of Array.isArray(body) ? (body as unknown[]) : [body]) {
    if (typeof message !== 'object' || message === null || !('method' in message)) continue;
    const { method, id } = message as { method?: unknown; id?: unknown };
    if (typeof id === 'string' || typeof id === 'number') requests.set(id, methodLabel(method));
    else if (id === undefined) notifications.push(methodLabel(method));
  }
  return { requests, notifications };
}

// JSON-RPC's own error codes (and the SDK's request timeout) in the taxonomy's words.
const outcomeOfRpcCode: Readonly<Record<number, TaxonomyCode>> = {
  [-32700]: 'INVALID_ARGUMENT',
  [-32600]: 'INVALID_ARGUMENT',
  [-32601]: 'INVALID_ARGUMENT',
  [-32602]: 'INVALID_ARGUMENT',
  // 2026-07-28: headers that disagree with the body, a client capability not declared, a revision not served.
  [-32020]: 'INVALID_ARGUMENT',
  [-32021]: 'INVALID_ARGUMENT',
  [-32022]: 'INVALID_ARGUMENT',
  [-32001]: 'TIMEOUT',
};

function taxonomyCodeOf(value: unknown): TaxonomyCode | undefined {
  const parsed = ErrorCode.safeParse(value);
  return parsed.success ? parsed.data : undefined;
}

/**
 * The outcome of a JSON-RPC response the endpoint sends, and the id it answers; undefined for anything that is not
 * a response (a notification or a request of the server's own). A tools/call answered with a tool error (`isError`)
 * is that error's code, as its `_meta` carries it: for the caller it failed, even though JSON-RPC succeeded.
 */
export function outcomeOfResponse(message: unknown): { readonly id: RpcId; readonly outcome: RequestOutcome } | undefined {
  if (typeof message !== 'object' || message === null) return undefined;
  const { id, result, error } = message as { id?: unknown; result?: unknown; error?: unknown };
  if (typeof id !== 'string' && typeof id !== 'number') return undefined;
  if (typeof error === 'object' && error !== null) {
    const { code, data } = error as { code?: unknown; data?: { code?: unknown } };
    const outcome = taxonomyCodeOf(data?.code) ?? (typeof code === 'number' ? outcomeOfRpcCode[code] : undefined) ?? 'INTERNAL';
    return { id, outcome };
  }
  if (typeof result !== 'object' || result === null) return undefined;
  const { isError, _meta: meta } = result as { isError?: unknown; _meta?: Record<string, { code?: unknown } | undefined> };
  if (isError !== true) return { id, outcome: 'ok' };
  return { id, outcome: taxonomyCodeOf(meta?.[mcpMetaKeys.error]?.code) ?? 'INTERNAL' };
}
