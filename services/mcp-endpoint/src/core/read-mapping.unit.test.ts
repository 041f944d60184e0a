import { describe, expect, it } from 'vitest';
import { parseUriTemplate, type EffectiveResource, type EffectiveResourceTemplate } from '@toolplane/contracts';
import { exposedResourceTemplate, readTargetOf, resourceIdOfTemplate, resourceIdOfUri, toMcpResourceTemplate } from './read-mapping.js';
import { changedLists, listDigests } from './tool-set-digest.js';

const governance = { toolVersion: '1', description: '', knowledgeSource: 'docs', scope: 'WORKSPACE', classification: 'INTERNAL' } as const;
const template = (resourceId: string, uriTemplate: string): EffectiveResourceTemplate => ({ ...governance, resourceId, uriTemplate, name: resourceId });
const resource = (resourceId: string, uri: string): EffectiveResource => ({ ...governance, resourceId, uri, name: resourceId });

function expand(uriTemplate: string, values: Record<string, string>): string {
  const parsed = parseUriTemplate(uriTemplate);
  if (!parsed.ok) throw new Error(parsed.problem);
  return parsed.template.expand(values);
}

describe('a bound resource template as MCP lists it', () => {
  it('is named by its governed id, with the server template’s variables as a query, and the server template in _meta', () => {
    const entry = toMcpResourceTemplate({ ...template('fixture.template', 'test://template/{id}/data'), title: 'Template', mimeType: 'application/json' });
    expect(entry).toEqual({
      uriTemplate: 'toolplane://resources/fixture.template{?id}',
      name: 'fixture.template',
      title: 'Template',
      description: '',
      mimeType: 'application/json',
      _meta: {
        'dev.toolplane/resource': { resourceId: 'fixture.template', serverUriTemplate: 'test://template/{id}/data', classification: 'INTERNAL', knowledgeSource: 'docs', scope: 'WORKSPACE' },
      },
    });
    expect(exposedResourceTemplate('docs.file', 'file:///{+path}{?rev,format}')).toBe('toolplane://resources/docs.file{?path,rev,format}');
    expect(exposedResourceTemplate('docs.fixed', 'test://fixed')).toBe('toolplane://resources/docs.fixed');
    expect(resourceIdOfTemplate(entry.uriTemplate)).toBe('fixture.template');
    expect(resourceIdOfTemplate('test://template/{id}/data')).toBeUndefined();
  });
});

describe('what a resources/read URI reads', () => {
  const set = {
    resources: [resource('fixture.static', 'test://static-text')],
    resourceTemplates: [template('fixture.files', 'file:///{+path}'), template('fixture.template', 'test://template/{id}/data')],
  };

  it('is a template, with its variables, from a URI a client expanded from the endpoint’s template', () => {
    const uri = expand(exposedResourceTemplate('fixture.template', 'test://template/{id}/data'), { id: 'a b/c' });
    expect(uri).toBe('toolplane://resources/fixture.template?id=a%20b%2Fc');
    // Not a resource's listed URI (which is read by id without the set).
    expect(resourceIdOfUri(uri)).toBeUndefined();
    expect(readTargetOf(uri, set)).toEqual({ resourceId: 'fixture.template', variables: { id: 'a b/c' }, template: true });
  });

  it('is a template from a URI the server’s own template expands to, a resource by its own URI first', () => {
    expect(readTargetOf('test://template/123/data', set)).toEqual({ resourceId: 'fixture.template', variables: { id: '123' }, template: true });
    expect(readTargetOf('test://static-text', set)).toEqual({ resourceId: 'fixture.static', variables: {}, template: false });
    expect(readTargetOf('file:///docs/a%20b.md', set)).toEqual({ resourceId: 'fixture.files', variables: { path: 'docs/a b.md' }, template: true });
    // A server template that matches anything does not take the endpoint's naming of another template.
    expect(readTargetOf('toolplane://resources/fixture.template?id=7', { resourceTemplates: [template('a.any', '{+anything}'), ...set.resourceTemplates] })).toMatchObject({
      resourceId: 'fixture.template',
      variables: { id: '7' },
    });
  });

  it('is nothing for a URI no resource or template of the caller names', () => {
    expect(readTargetOf('test://template/1/2/data', set)).toBeUndefined();
    expect(readTargetOf('toolplane://resources/fixture.unknown?id=1', set)).toBeUndefined();
    expect(readTargetOf('test://nonexistent-resource-for-conformance-testing', set)).toBeUndefined();
    expect(readTargetOf('test://template/123/data', { resources: [] })).toBeUndefined();
  });
});

describe('the resources digest', () => {
  it('moves when a template is bound or unbound, and is unchanged by templates when there are none', () => {
    const none = listDigests({ tools: [], resources: [], prompts: [] });
    expect(listDigests({ tools: [], resources: [], resourceTemplates: [], prompts: [] })).toEqual(none);
    const bound = listDigests({ tools: [], resources: [], resourceTemplates: [toMcpResourceTemplate(template('fixture.template', 'test://template/{id}/data'))], prompts: [] });
    expect(changedLists(none, bound)).toEqual(['resources']);
  });
});
