import { describe, expect, it } from 'vitest';
import { BindResourceRequest, hasErrorCode, type McpDiscoveredResourceTemplate } from '@toolplane/contracts';
import { at, descriptor, hash, server, snapshot, tool } from '../../test/core-fixtures.js';
import { readViews } from './binding-view.js';
import { definitionDrift } from './discovery-diff.js';
import { resourceBindingOf, resourceTemplateItem } from './read-bindings.js';
import { buildSnapshot } from './snapshot.js';

const template: McpDiscoveredResourceTemplate = {
  uriTemplate: 'test://template/{id}/data{?format}',
  name: 'template',
  title: 'Resource Template',
  mimeType: 'application/json',
  definitionHash: hash('template'),
};

const request = BindResourceRequest.parse({ serverId: '00000000-0000-4000-8000-000000000001', uriTemplate: template.uriTemplate, knowledgeSource: 'docs', classification: 'INTERNAL' });

function refusal(run: () => unknown): string {
  try {
    run();
  } catch (error) {
    if (hasErrorCode(error)) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error('expected a refusal');
}

describe('a resource template as a bound item', () => {
  it('takes its variables as required string arguments, and nothing else', () => {
    const item = resourceTemplateItem(template);
    expect(item).toMatchObject({ name: template.uriTemplate, title: 'Resource Template', description: '', definitionHash: hash('template') });
    expect(JSON.parse(item.inputSchemaJson)).toEqual({
      type: 'object',
      properties: { id: { type: 'string' }, format: { type: 'string' } },
      required: ['id', 'format'],
      additionalProperties: false,
    });
    expect(JSON.parse(resourceTemplateItem({ ...template, uriTemplate: 'test://fixed' }).inputSchemaJson)).toEqual({ type: 'object', properties: {}, additionalProperties: false });
  });

  it('records the template in the resource binding', () => {
    expect(resourceBindingOf(request, template)).toEqual({
      resource: { knowledgeSource: 'docs', scope: 'WORKSPACE', classification: 'INTERNAL', mimeType: 'application/json', uriTemplate: template.uriTemplate },
    });
  });

  it('is refused when its template cannot be expanded from string arguments, or is too long to pin', () => {
    expect(refusal(() => resourceTemplateItem({ ...template, uriTemplate: 'test://{path*}' }))).toMatch(/^INVALID_ARGUMENT: .*level-4/);
    expect(refusal(() => resourceTemplateItem({ ...template, uriTemplate: 'test://{id' }))).toMatch(/^INVALID_ARGUMENT: .*not closed/);
    expect(refusal(() => resourceTemplateItem({ ...template, uriTemplate: `test://${'x'.repeat(300)}{id}` }))).toMatch(/^INVALID_ARGUMENT: .*longer than 256/);
  });

  it('is bound by a uri or a uriTemplate, never both or neither', () => {
    const base = { serverId: request.serverId, knowledgeSource: 'docs', classification: 'INTERNAL' };
    expect(BindResourceRequest.safeParse({ ...base, uri: 'test://doc' }).success).toBe(true);
    expect(BindResourceRequest.safeParse({ ...base, uri: 'test://doc', uriTemplate: template.uriTemplate }).success).toBe(false);
    expect(BindResourceRequest.safeParse(base).success).toBe(false);
  });
});

describe('resource templates in discovery', () => {
  const found = { protocolVersion: '2025-11-25', serverInfo: { name: 's', version: '1' }, tools: [tool('a')], resources: [], prompts: [] };

  it('are stored ordered by template and hashed into the snapshot only when there are any', () => {
    const without = buildSnapshot(found, at);
    expect(without.resourceTemplates).toBeUndefined();
    expect(buildSnapshot({ ...found, resourceTemplates: [] }, at)).toEqual(without);
    const other = { ...template, uriTemplate: 'test://a/{id}', definitionHash: hash('a') };
    const built = buildSnapshot({ ...found, resourceTemplates: [template, other] }, at);
    expect(built.resourceTemplates?.map((t) => t.uriTemplate)).toEqual(['test://a/{id}', template.uriTemplate]);
    expect(built.snapshotHash).not.toBe(without.snapshotHash);
    expect(buildSnapshot({ ...found, resourceTemplates: [{ ...template, definitionHash: hash('changed') }, other] }, at).snapshotHash).not.toBe(built.snapshotHash);
    expect(refusal(() => buildSnapshot({ ...found, resourceTemplates: [template, template] }, at))).toMatch(/^INVALID_ARGUMENT: .*resource template .* twice/);
  });

  it('suspend a template binding whose template changed, and retire one whose template is gone, never comparing it with a resource', () => {
    const bound = descriptor({
      toolId: 'everything.template',
      providerToolName: template.uriTemplate,
      definitionHash: hash('template'),
      resource: { knowledgeSource: 'docs', scope: 'WORKSPACE', classification: 'INTERNAL', uriTemplate: template.uriTemplate },
    });
    const listed = (templates: McpDiscoveredResourceTemplate[]) => ({ ...snapshot([tool('echo')]), resourceTemplates: templates });
    expect(definitionDrift(listed([template]), [bound])).toEqual([]);
    expect(definitionDrift(listed([{ ...template, definitionHash: hash('v2') }]), [bound])).toEqual([{ descriptor: bound, change: 'Changed', definitionHash: hash('v2') }]);
    // A resource whose URI is the template's text is another item.
    const asResource = { ...snapshot([tool('echo')]), resources: [{ uri: template.uriTemplate, name: 'template', definitionHash: hash('template') }] };
    expect(definitionDrift(asResource, [bound])).toEqual([{ descriptor: bound, change: 'Removed' }]);
  });

  it('are listed with their binding, apart from resources', () => {
    const bound = descriptor({
      toolId: 'everything.template',
      providerToolName: template.uriTemplate,
      definitionHash: hash('template'),
      resource: { knowledgeSource: 'docs', scope: 'WORKSPACE', classification: 'INTERNAL', uriTemplate: template.uriTemplate },
    });
    const on = server('Active', { capabilities: { ...snapshot([tool('echo')]), resources: [{ uri: template.uriTemplate, name: 'same text', definitionHash: hash('r') }], resourceTemplates: [template] } });
    const views = readViews(on, [bound]);
    expect(views.resourceTemplates).toEqual([
      expect.objectContaining({ capability: 'resource', name: template.uriTemplate, title: 'Resource Template', binding: 'Bound', invocable: true, toolId: 'everything.template', classification: 'INTERNAL' }),
    ]);
    expect(views.resources).toEqual([expect.objectContaining({ name: template.uriTemplate, binding: 'Unbound' })]);
  });
});
