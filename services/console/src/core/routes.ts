// The console's routes, parsed from method and path into data; ids in paths are checked against their contracts
// here, so nothing malformed reaches a subject or a page.
import { ExternalId, ToolCallId, Uuid, WorkspaceId } from '@toolplane/contracts';

/** Where a request goes. */
export type Route =
  | { readonly kind: 'home' }
  | { readonly kind: 'sign-in-form' }
  | { readonly kind: 'sign-in' }
  | { readonly kind: 'sign-out' }
  | { readonly kind: 'asset'; readonly name: 'console.js' | 'console.css' }
  /** Browsers ask for it unprompted; the console has none, and says so without an error. */
  | { readonly kind: 'no-icon' }
  | { readonly kind: 'approvals'; readonly workspace: string }
  | { readonly kind: 'approval-events'; readonly workspace: string }
  | { readonly kind: 'decide'; readonly workspace: string; readonly approvalId: string; readonly decision: 'approve' | 'reject' }
  | { readonly kind: 'calls'; readonly workspace: string }
  | { readonly kind: 'call'; readonly workspace: string; readonly toolCallId: string }
  | { readonly kind: 'run'; readonly workspace: string; readonly flowRunId: string }
  | { readonly kind: 'audit'; readonly workspace: string }
  | { readonly kind: 'method-not-allowed'; readonly allow: string }
  | { readonly kind: 'not-found' };

const get = (method: string) => method === 'GET' || method === 'HEAD';

function decoded(segment: string | undefined): string | undefined {
  if (segment === undefined) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

function workspaceRoute(method: string, workspace: string, rest: readonly (string | undefined)[]): Route {
  const [section, id, action, extra] = rest;
  const only = (route: Route, allow: 'GET' | 'POST'): Route => {
    if (allow === 'GET' ? get(method) : method === 'POST') return route;
    return { kind: 'method-not-allowed', allow: allow === 'GET' ? 'GET, HEAD' : 'POST' };
  };
  if (extra !== undefined) return { kind: 'not-found' };
  switch (section) {
    case 'approvals':
      if (id === undefined) return only({ kind: 'approvals', workspace }, 'GET');
      if (id === 'events' && action === undefined) return only({ kind: 'approval-events', workspace }, 'GET');
      if ((action === 'approve' || action === 'reject') && Uuid.safeParse(id).success) return only({ kind: 'decide', workspace, approvalId: id, decision: action }, 'POST');
      return { kind: 'not-found' };
    case 'calls':
      if (action !== undefined) return { kind: 'not-found' };
      if (id === undefined) return only({ kind: 'calls', workspace }, 'GET');
      return ToolCallId.safeParse(id).success ? only({ kind: 'call', workspace, toolCallId: id }, 'GET') : { kind: 'not-found' };
    case 'runs':
      return action === undefined && id !== undefined && ExternalId.safeParse(id).success ? only({ kind: 'run', workspace, flowRunId: id }, 'GET') : { kind: 'not-found' };
    case 'audit':
      return id === undefined ? only({ kind: 'audit', workspace }, 'GET') : { kind: 'not-found' };
    default:
      return { kind: 'not-found' };
  }
}

/** The route of a request. */
export function routeOf(method: string, pathname: string): Route {
  const segments = pathname.split('/').slice(1).map(decoded);
  if (segments.some((segment) => segment === undefined)) return { kind: 'not-found' };
  const [first, second, ...rest] = segments as string[];
  if (pathname === '/') return get(method) ? { kind: 'home' } : { kind: 'method-not-allowed', allow: 'GET, HEAD' };
  if (pathname === '/sign-in') return get(method) ? { kind: 'sign-in-form' } : method === 'POST' ? { kind: 'sign-in' } : { kind: 'method-not-allowed', allow: 'GET, HEAD, POST' };
  if (pathname === '/sign-out') return method === 'POST' ? { kind: 'sign-out' } : { kind: 'method-not-allowed', allow: 'POST' };
  if (pathname === '/favicon.ico') return get(method) ? { kind: 'no-icon' } : { kind: 'method-not-allowed', allow: 'GET, HEAD' };
  if (first === 'assets' && (second === 'console.js' || second === 'console.css') && rest.length === 0) {
    return get(method) ? { kind: 'asset', name: second } : { kind: 'method-not-allowed', allow: 'GET, HEAD' };
  }
  if (first === 'w' && second !== undefined && WorkspaceId.safeParse(second).success && rest.length > 0) return workspaceRoute(method, second, rest);
  return { kind: 'not-found' };
}
