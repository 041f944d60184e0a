import { describe, expect, it } from 'vitest';
import { resourceUriOf } from './resource-uri.js';

const binding = { knowledgeSource: 'docs', scope: 'WORKSPACE', classification: 'INTERNAL' } as const;

describe('resourceUriOf', () => {
  it('reads a bound resource at its own URI, whatever the arguments', () => {
    expect(resourceUriOf({ providerToolName: 'test://static-text', resource: binding }, {})).toBe('test://static-text');
  });

  it('expands a bound template with the arguments', () => {
    const descriptor = { providerToolName: 'test://template/{id}/data{?q}', resource: { ...binding, uriTemplate: 'test://template/{id}/data{?q}' } };
    expect(resourceUriOf(descriptor, { id: '123', q: 'a b' })).toBe('test://template/123/data?q=a%20b');
  });

  it('refuses arguments the binding’s schema would not have admitted', () => {
    const descriptor = { providerToolName: 'test://{id}', resource: { ...binding, uriTemplate: 'test://{id}' } };
    expect(() => resourceUriOf(descriptor, {})).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
    expect(() => resourceUriOf(descriptor, { id: 7 })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT' }));
  });
});
