// Resource templates against a real server: server-everything lists `demo://resource/dynamic/text/{resourceId}` (and a
// blob twin) with resources/templates/list. Discovery stores them with their definition hashes; a bind by uriTemplate
// makes a READ descriptor whose arguments are the template's variables and whose resource binding records the template.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { JsonObject, registryCommandSchemas as schemas } from '@toolplane/contracts';
import { realServerPath } from '@toolplane/mcp/testing';
import { createDescriptorCache, type DescriptorCache, type Messaging } from '@toolplane/messaging';
import type { RunningService } from '@toolplane/service-kit';
import { testScope } from '@toolplane/testing';
import { call, codeOf, connectClient, eventually, freshScope, startRegistry } from './harness.js';

const scope = testScope('registry_templates');
let registry: RunningService;
let client: Messaging;
let cache: DescriptorCache;

beforeAll(async () => {
  registry = await startRegistry(scope);
  client = await connectClient(scope, 'templates');
  cache = await createDescriptorCache(client);
  await cache.ready;
});

afterAll(async () => {
  cache?.close();
  await client?.drain();
  await registry?.stop();
});

const textTemplate = 'demo://resource/dynamic/text/{resourceId}';

describe('resource templates', () => {
  it('are discovered with their definition hashes, listed unbound, bound by uriTemplate with their variables as arguments, and unbound', { timeout: 60_000 }, async () => {
    const tenantScope = freshScope('templates');
    const registered = await call(client, tenantScope, 'register', schemas.register, {
      name: 'everything',
      stdio: { executable: process.execPath, args: [realServerPath('everything'), 'stdio'] },
    });
    const serverId = registered.server.serverId;
    const discovered = await call(client, tenantScope, 'discover', schemas.discover, { serverId });
    const templates = discovered.server.capabilities?.resourceTemplates ?? [];
    const text = templates.find((template) => template.uriTemplate === textTemplate);
    expect(text).toMatchObject({ name: expect.any(String) as unknown, definitionHash: expect.stringMatching(/^[0-9a-f]{64}$/) as unknown });
    expect(templates.map((template) => template.uriTemplate)).toContain('demo://resource/dynamic/blob/{resourceId}');

    const before = await call(client, tenantScope, 'listTools', schemas.listTools, { serverId });
    expect(before.resourceTemplates?.find((view) => view.name === textTemplate)).toMatchObject({ capability: 'resource', binding: 'Unbound', invocable: false });

    const bind = { serverId, uriTemplate: textTemplate, resourceId: 'everything.dynamic_text', knowledgeSource: 'demo-docs', classification: 'INTERNAL', expectedDefinitionHash: text!.definitionHash } as const;
    const bound = await call(client, tenantScope, 'bindResource', schemas.bindResource, bind);
    expect(bound).toMatchObject({
      created: true,
      serverState: 'Active',
      descriptor: {
        toolId: 'everything.dynamic_text',
        toolVersion: '1',
        providerToolName: textTemplate,
        sideEffectClass: 'READ',
        idempotency: 'NATURAL',
        definitionHash: text!.definitionHash,
        resource: { knowledgeSource: 'demo-docs', scope: 'WORKSPACE', classification: 'INTERNAL', uriTemplate: textTemplate },
      },
    });
    expect(JSON.parse(bound.descriptor.inputSchemaJson)).toEqual({
      type: 'object',
      properties: { resourceId: { type: 'string' } },
      required: ['resourceId'],
      additionalProperties: false,
    });
    expect(await call(client, tenantScope, 'bindResource', schemas.bindResource, bind)).toMatchObject({ created: false, descriptor: { toolVersion: '1' } });
    await eventually('the template binding in the descriptor cache', () => cache.resolve(tenantScope, 'everything.dynamic_text'));

    const after = await call(client, tenantScope, 'listTools', schemas.listTools, { serverId });
    expect(after.resourceTemplates?.find((view) => view.name === textTemplate)).toMatchObject({ binding: 'Bound', invocable: true, toolId: 'everything.dynamic_text', classification: 'INTERNAL' });
    // A template is not a resource: nothing among the resources is bound by it.
    expect(after.resources.filter((view) => view.binding !== 'Unbound')).toEqual([]);

    // Neither a template the server does not list, nor the template's text as a resource URI, can be bound.
    expect(await codeOf(call(client, tenantScope, 'bindResource', schemas.bindResource, { ...bind, uriTemplate: 'demo://resource/nothing/{id}', expectedDefinitionHash: undefined }))).toBe('NOT_FOUND');
    const { uriTemplate: _template, ...byUri } = bind;
    expect(await codeOf(call(client, tenantScope, 'bindResource', schemas.bindResource, { ...byUri, uri: textTemplate, expectedDefinitionHash: undefined }))).toBe('NOT_FOUND');

    const unbound = await call(client, tenantScope, 'unbind', schemas.unbind, { serverId, toolName: textTemplate, capability: 'resource' });
    expect(unbound.descriptor).toMatchObject({ toolId: 'everything.dynamic_text', active: false, inactiveReason: 'Unbound' });
    await eventually('the unbinding in the descriptor cache', () => (cache.resolve(tenantScope, 'everything.dynamic_text', '1')?.active === false ? true : undefined));
  });

  it('refuses a request naming both a uri and a uriTemplate, or neither', async () => {
    const tenantScope = freshScope('templates_both');
    // Sent as plain JSON: the registry itself refuses it.
    const unchecked = { request: JsonObject, reply: schemas.bindResource.reply };
    const base = { serverId: '00000000-0000-4000-8000-000000000001', knowledgeSource: 'demo-docs', classification: 'INTERNAL' };
    expect(await codeOf(call(client, tenantScope, 'bindResource', unchecked, { ...base, uri: 'demo://x', uriTemplate: textTemplate }))).toBe('INVALID_ARGUMENT');
    expect(await codeOf(call(client, tenantScope, 'bindResource', unchecked, base))).toBe('INVALID_ARGUMENT');
  });
});
