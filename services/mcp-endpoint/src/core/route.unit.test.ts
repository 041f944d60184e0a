import { describe, expect, it } from 'vitest';
import { resourceMetadata, resourceMetadataUrl, resourceUrl, routeOf } from './route.js';

describe('routes', () => {
  it('name a workspace’s endpoint by tenant and workspace', () => {
    expect(routeOf('/mcp/acme/main')).toEqual({ kind: 'mcp', scope: { tenant: 'acme', workspace: 'main' }, surface: 'all' });
    expect(routeOf('/mcp/acme/main/')).toEqual({ kind: 'mcp', scope: { tenant: 'acme', workspace: 'main' }, surface: 'all' });
  });

  it('name the endpoint of a workspace’s flow-backed tools alone', () => {
    expect(routeOf('/mcp/acme/main/flows')).toEqual({ kind: 'mcp', scope: { tenant: 'acme', workspace: 'main' }, surface: 'flows' });
    expect(routeOf('/mcp/acme/main/flows/')).toEqual({ kind: 'mcp', scope: { tenant: 'acme', workspace: 'main' }, surface: 'flows' });
    expect(routeOf('/mcp/acme/flows')).toEqual({ kind: 'mcp', scope: { tenant: 'acme', workspace: 'flows' }, surface: 'all' });
    expect(routeOf('/mcp/acme/main/flows/x')).toEqual({ kind: 'not-found' });
  });

  it('refuse ids that could not be subject tokens, and other shapes', () => {
    for (const path of ['/mcp', '/mcp/', '/mcp/acme', '/mcp/acme/main/extra', '/mcp/ac.me/main', '/mcp/acme/ma*in', '/mcp/%2A/main', '/mcpx/acme/main', '/']) {
      expect(routeOf(path)).toEqual({ kind: 'not-found' });
    }
  });

  it('serve the protected-resource metadata at the root and inserted before each resource’s path (RFC 9728 §3.1)', () => {
    expect(routeOf('/.well-known/oauth-protected-resource')).toEqual({ kind: 'resource-metadata', scope: undefined });
    expect(routeOf('/.well-known/oauth-protected-resource/mcp/acme/main')).toEqual({ kind: 'resource-metadata', scope: { tenant: 'acme', workspace: 'main' } });
    expect(routeOf('/.well-known/oauth-protected-resource/mcp/acme')).toEqual({ kind: 'not-found' });
  });

  it('build the resource identifier and its metadata URL from the public URL', () => {
    const scope = { tenant: 'acme', workspace: 'main' };
    expect(resourceUrl('https://tools.example.com', scope)).toBe('https://tools.example.com/mcp/acme/main');
    expect(resourceMetadataUrl('https://tools.example.com', scope)).toBe('https://tools.example.com/.well-known/oauth-protected-resource/mcp/acme/main');
    expect(resourceMetadata('https://tools.example.com', scope, [])).toEqual({
      resource: 'https://tools.example.com/mcp/acme/main',
      bearer_methods_supported: ['header'],
      resource_signing_alg_values_supported: ['EdDSA', 'ES256'],
      resource_name: 'Toolplane MCP endpoint of acme/main',
    });
    expect(resourceMetadata('https://tools.example.com', undefined, ['https://login.example.com'])).toMatchObject({
      resource: 'https://tools.example.com',
      authorization_servers: ['https://login.example.com'],
    });
  });
});
