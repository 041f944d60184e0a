import { TenantId, WorkspaceId, type Scope } from '@toolplane/contracts';

/** Where MCP clients connect: `/mcp/<tenant>/<workspace>`, one endpoint per workspace. */
export const MCP_PATH_PREFIX = '/mcp';
/** RFC 9728's well-known path of protected-resource metadata; a resource's own is this plus the resource's path. */
export const RESOURCE_METADATA_PATH = '/.well-known/oauth-protected-resource';

/** The tools an endpoint path serves: every tool offered to the agent, or only the workspace's flow-backed tools. */
export type ToolSurface = 'all' | 'flows';

/** The path segment after `/mcp/<tenant>/<workspace>` of the endpoint that serves flow-backed tools alone. */
export const FLOWS_PATH_SEGMENT = 'flows';

/** What a request's path names. */
export type Route =
  | { readonly kind: 'mcp'; readonly scope: Scope; readonly surface: ToolSurface }
  | { readonly kind: 'resource-metadata'; readonly scope: Scope | undefined }
  | { readonly kind: 'not-found' };

/** The scope `/<tenant>/<workspace>` names (valid ids only: they become NATS subject tokens). */
function scopeOf(rest: string): Scope | undefined {
  const match = /^\/([^/]+)\/([^/]+)\/?$/.exec(rest);
  if (match === null) return undefined;
  const [, tenant, workspace] = match;
  if (!TenantId.safeParse(tenant).success || !WorkspaceId.safeParse(workspace).success) return undefined;
  return { tenant: tenant as string, workspace: workspace as string };
}

/** The route of a request path (without its query). */
export function routeOf(pathname: string): Route {
  if (pathname === RESOURCE_METADATA_PATH || pathname === `${RESOURCE_METADATA_PATH}/`) return { kind: 'resource-metadata', scope: undefined };
  if (pathname.startsWith(`${RESOURCE_METADATA_PATH}${MCP_PATH_PREFIX}/`)) {
    const scope = scopeOf(pathname.slice(RESOURCE_METADATA_PATH.length + MCP_PATH_PREFIX.length));
    return scope === undefined ? { kind: 'not-found' } : { kind: 'resource-metadata', scope };
  }
  if (pathname.startsWith(`${MCP_PATH_PREFIX}/`)) {
    const rest = pathname.slice(MCP_PATH_PREFIX.length);
    const flows = new RegExp(`^(/[^/]+/[^/]+)/${FLOWS_PATH_SEGMENT}/?$`).exec(rest);
    const scope = scopeOf(flows?.[1] ?? rest);
    return scope === undefined ? { kind: 'not-found' } : { kind: 'mcp', scope, surface: flows === null ? 'all' : 'flows' };
  }
  return { kind: 'not-found' };
}

/** The resource identifier of a workspace's endpoint (what tokens are for, and what metadata describes). */
export function resourceUrl(publicUrl: string, scope: Scope): string {
  return `${publicUrl}${MCP_PATH_PREFIX}/${scope.tenant}/${scope.workspace}`;
}

/** Where the metadata of a workspace's endpoint is served (RFC 9728 §3.1: the well-known path before the resource's). */
export function resourceMetadataUrl(publicUrl: string, scope: Scope): string {
  return `${publicUrl}${RESOURCE_METADATA_PATH}${MCP_PATH_PREFIX}/${scope.tenant}/${scope.workspace}`;
}

/** The RFC 9728 protected-resource metadata document of a workspace's endpoint (or of the whole server). */
export function resourceMetadata(publicUrl: string, scope: Scope | undefined, authorizationServers: readonly string[]): Record<string, unknown> {
  return {
    resource: scope === undefined ? publicUrl : resourceUrl(publicUrl, scope),
    ...(authorizationServers.length === 0 ? {} : { authorization_servers: [...authorizationServers] }),
    bearer_methods_supported: ['header'],
    resource_signing_alg_values_supported: ['EdDSA', 'ES256'],
    resource_name: scope === undefined ? 'Toolplane MCP endpoint' : `Toolplane MCP endpoint of ${scope.tenant}/${scope.workspace}`,
  };
}
