import { canonicalHash, ToolplaneError, type SandboxProfile } from '@toolplane/contracts';

/** A server spawned as a child process and spoken to over its stdin/stdout. */
export interface McpStdioTarget {
  readonly transport: 'stdio';
  /** An absolute path, or a name looked up on the minimal PATH the child gets. */
  readonly command: string;
  readonly args?: readonly string[] | undefined;
  /** The whole environment of the child besides PATH: only what the binding declares, nothing inherited. */
  readonly env?: Readonly<Record<string, string>> | undefined;
  /** The child's working directory; a fresh private temporary directory per session when absent. */
  readonly cwd?: string | undefined;
  /** The sandbox the server runs in when the sandbox is on (default: DEFAULT_SANDBOX_PROFILE). */
  readonly sandbox?: SandboxProfile | undefined;
}

/** A server reached over MCP Streamable HTTP. */
export interface McpHttpTarget {
  readonly transport: 'http';
  readonly url: string;
  /** Extra request headers (for example `Authorization` with a brokered credential). */
  readonly headers?: Readonly<Record<string, string>> | undefined;
}

/** Where an MCP server is and how to reach it, as plain data. */
export type McpTarget = McpStdioTarget | McpHttpTarget;

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
// Headers the transport owns: letting a binding set them would break the session or the protocol negotiation.
const RESERVED_HEADERS = new Set(['mcp-session-id', 'mcp-protocol-version', 'content-type', 'accept', 'content-length', 'host']);

/** Checks a target's shape and returns it; anything malformed is INVALID_ARGUMENT naming the field. */
export function validateTarget(target: McpTarget): McpTarget {
  const invalid = (message: string) => new ToolplaneError('INVALID_ARGUMENT', `invalid MCP target: ${message}`);
  if (typeof target !== 'object' || target === null) throw invalid('not an object');
  if (target.transport === 'stdio') {
    if (typeof target.command !== 'string' || target.command.trim() === '' || target.command.includes('\0')) throw invalid('command must be a non-empty string');
    for (const arg of target.args ?? []) if (typeof arg !== 'string' || arg.includes('\0')) throw invalid('every arg must be a string without NUL');
    for (const [name, value] of Object.entries(target.env ?? {})) {
      if (!ENV_NAME.test(name)) throw invalid(`env name ${JSON.stringify(name)} is not a valid variable name`);
      if (typeof value !== 'string' || value.includes('\0')) throw invalid(`env ${name} must be a string without NUL`);
    }
    if (target.cwd !== undefined && (typeof target.cwd !== 'string' || !target.cwd.startsWith('/'))) throw invalid('cwd must be an absolute path');
    return target;
  }
  if (target.transport === 'http') {
    let url: URL;
    try {
      url = new URL(target.url);
    } catch {
      throw invalid(`url ${JSON.stringify(String(target.url)).slice(0, 200)} is not a URL`);
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') throw invalid(`url scheme ${url.protocol} is not http or https`);
    if (url.username !== '' || url.password !== '') throw invalid('url must not carry credentials; use headers');
    for (const [name, value] of Object.entries(target.headers ?? {})) {
      if (!HEADER_NAME.test(name)) throw invalid(`header name ${JSON.stringify(name)} is not a valid header name`);
      if (RESERVED_HEADERS.has(name.toLowerCase())) throw invalid(`header ${name} is set by the transport`);
      if (typeof value !== 'string' || /[\r\n\0]/.test(value)) throw invalid(`header ${name} has an invalid value`);
    }
    return target;
  }
  throw invalid(`unknown transport ${JSON.stringify((target as { transport?: unknown }).transport)}`);
}

/**
 * The identity of a target for pooling: a hash over everything that makes a session different (command, args,
 * env, cwd, url, headers), so two bindings with different credentials never share a session, and no secret
 * appears in the key.
 */
export function mcpTargetKey(target: McpTarget): string {
  if (target.transport === 'stdio') {
    return canonicalHash({ transport: 'stdio', command: target.command, args: [...(target.args ?? [])], env: { ...target.env }, cwd: target.cwd ?? null, sandbox: target.sandbox ?? null });
  }
  const headers = Object.fromEntries(Object.entries(target.headers ?? {}).map(([name, value]) => [name.toLowerCase(), value]));
  return canonicalHash({ transport: 'http', url: new URL(target.url).href, headers });
}

/** A description of a target safe to show in errors: never env values or header values, which may be secrets. */
export function describeTarget(target: McpTarget): string {
  if (target.transport === 'stdio') return `stdio command ${JSON.stringify(target.command)}`;
  try {
    const url = new URL(target.url);
    return `${url.origin}${url.pathname}`;
  } catch {
    return 'an invalid URL';
  }
}
