import { ToolplaneError, type LeasedCredential, type McpServer, type McpServerSetting, type ToolFailure } from '@toolplane/contracts';
import type { McpTarget } from '@toolplane/mcp';

// Which connections a call needs and where their credentials go. A call leases the connections its tool declares
// (`secretDependencies`) and those its server's settings name (stdio `command.env`, HTTP `headers`, the server's
// `connectionRef`). A tool-level dependency reaches the tool through the server setting that names the same
// connection; one that no setting names could not reach the tool at all, so the call is refused before any lease.

/** The connections a call leases, in a stable order, each once; or why the call cannot have its credentials. */
export type ConnectionPlan = { readonly ok: true; readonly connectionRefs: readonly string[] } | { readonly ok: false; readonly failure: ToolFailure };

function settingsOf(server: McpServer): readonly McpServerSetting[] {
  return (server.transport === 'Stdio' ? server.command?.env : server.headers) ?? [];
}

/** The connections a server's own settings name (where they are injected). */
function serverConnections(server: McpServer): string[] {
  const refs = settingsOf(server).flatMap((setting) => ('connectionRef' in setting ? [setting.connectionRef] : []));
  if (server.connectionRef !== undefined) refs.push(server.connectionRef);
  return refs;
}

/** Plans the leases of a call of a tool (its dependencies) on `server` (undefined: the tool has no MCP server). */
export function planConnections(secretDependencies: readonly string[], server: McpServer | undefined): ConnectionPlan {
  const refused = (message: string): ConnectionPlan => ({ ok: false, failure: { code: 'CONFLICT', message: message.slice(0, 4096), retryable: false } });
  if (server === undefined) {
    if (secretDependencies.length === 0) return { ok: true, connectionRefs: [] };
    return refused('the tool depends on connections but has no MCP server to give them to');
  }
  if (server.transport === 'Stdio' && server.connectionRef !== undefined) {
    return refused(`server ${server.name} runs over stdio: its credentials go in command.env settings, not in connectionRef`);
  }
  const named = serverConnections(server);
  const unplaced = secretDependencies.filter((ref) => !named.includes(ref));
  if (unplaced.length > 0) {
    const where = server.transport === 'Stdio' ? 'command.env' : 'headers or connectionRef';
    return refused(`the tool depends on connection(s) ${unplaced.join(', ')}, which no setting of server ${server.name} names (${where})`);
  }
  return { ok: true, connectionRefs: [...new Set([...named, ...secretDependencies])] };
}

/** The credential as one value, for an environment variable or a named header. */
export function credentialValue(credential: LeasedCredential): string {
  switch (credential.kind) {
    case 'api-key':
      return credential.apiKey;
    case 'bearer':
      return credential.token;
    case 'basic':
      return `${credential.username}:${credential.password}`;
    case 'oauth2-client-credentials':
      return credential.accessToken;
  }
}

/** The `Authorization` header a server's own connection becomes: Basic for basic credentials, Bearer otherwise. */
export function authorizationHeader(credential: LeasedCredential): string {
  if (credential.kind === 'basic') return `Basic ${Buffer.from(`${credential.username}:${credential.password}`, 'utf8').toString('base64')}`;
  return `Bearer ${credentialValue(credential)}`;
}

/**
 * The values to scrub from whatever a call produces (results, failures): every secret a lease carried. The
 * redactor also searches their encodings (base64 covers a Basic header, URL- and JSON-escaping the rest).
 */
export function secretValuesOf(credentials: Iterable<LeasedCredential>): string[] {
  const values = new Set<string>();
  for (const credential of credentials) {
    values.add(credentialValue(credential));
    if (credential.kind === 'basic') values.add(credential.password);
  }
  return [...values];
}

/**
 * The MCP target of a server with the leased credentials in place (`credentials` by connection ref; it must hold
 * every connection {@link planConnections} named). A stdio server gets exactly its settings as its environment;
 * an HTTP server its settings as headers, plus `Authorization` from its own connection.
 */
export function targetOf(server: McpServer, credentials: ReadonlyMap<string, LeasedCredential>): McpTarget {
  const leased = (ref: string): LeasedCredential => {
    const credential = credentials.get(ref);
    if (credential === undefined) throw new ToolplaneError('INTERNAL', `no credential was leased for connection ${ref}`);
    return credential;
  };
  const values: Record<string, string> = {};
  for (const setting of settingsOf(server)) values[setting.name] = 'value' in setting ? setting.value : credentialValue(leased(setting.connectionRef));
  if (server.transport === 'Stdio') {
    if (server.command === undefined) throw new RangeError(`server ${server.name} has no command`);
    return { transport: 'stdio', command: server.command.executable, args: server.command.args, env: values, ...(server.sandbox === undefined ? {} : { sandbox: server.sandbox }) };
  }
  if (server.endpointUrl === undefined) throw new RangeError(`server ${server.name} has no endpoint`);
  if (server.connectionRef !== undefined) {
    // The server's own connection wins over a plain header of the same name (a plain setting is no credential).
    for (const name of Object.keys(values)) if (name.toLowerCase() === 'authorization') delete values[name];
    values['Authorization'] = authorizationHeader(leased(server.connectionRef));
  }
  return { transport: 'http', url: server.endpointUrl, headers: values };
}
