import { describe, expect, it } from 'vitest';
import { generateSigningKeyPair, issueToken } from '@toolplane/auth';
import type { AgentContextClaims, OperatorClaims, TokenClaims } from '@toolplane/contracts';
import { createContext, inboxPrefixOf, scopeOf } from './context.js';

describe('inboxPrefixOf', () => {
  it('takes --inbox-prefix over TOOLPLANE_INBOX_PREFIX over the scope’s default', () => {
    const env = { TOOLPLANE_INBOX_PREFIX: '_INBOX_from_env', TOOLPLANE_TENANT: 'acme', TOOLPLANE_WORKSPACE: 'prod' };
    expect(inboxPrefixOf({ inboxPrefix: 'custom.inbox' }, env)).toBe('custom.inbox');
    expect(inboxPrefixOf({}, env)).toBe('_INBOX_from_env');
    expect(inboxPrefixOf({}, { ...env, TOOLPLANE_INBOX_PREFIX: '' })).toBe('_INBOX_acme.prod');
    expect(inboxPrefixOf({ tenant: 'globex', workspace: 'dev' }, { TOOLPLANE_TENANT: 'acme' })).toBe('_INBOX_globex.dev');
  });

  it('leaves NATS’s own _INBOX when the tenant or workspace is unknown', () => {
    expect(inboxPrefixOf({ tenant: 'acme' }, {})).toBeUndefined();
    expect(inboxPrefixOf({}, { TOOLPLANE_WORKSPACE: 'prod' })).toBeUndefined();
  });

  it('refuses a malformed prefix with one INVALID_ARGUMENT line naming the flag or variable', () => {
    expect(() => inboxPrefixOf({ inboxPrefix: '_INBOX.>' }, {})).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^--inbox-prefix: inbox prefix "_INBOX\.>" is malformed: [^\n]+$/) as unknown }));
    expect(() => inboxPrefixOf({}, { TOOLPLANE_INBOX_PREFIX: 'a b' })).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: expect.stringMatching(/^TOOLPLANE_INBOX_PREFIX: inbox prefix "a b" is malformed/) as unknown }));
  });
});

describe('scopeOf', () => {
  const operator: OperatorClaims = { kind: 'human', tenant: 'acme', workspaces: ['main'], principal: 'user:ada@acme.example', roles: [] };
  const agent: AgentContextClaims = { kind: 'agent', tenant: 'globex', workspace: 'prod', principal: 'user:bob@globex.example', agentId: 'support', agentRevision: '1' };
  const token = async (claims: TokenClaims) => issueToken(claims, (await generateSigningKeyPair('k1')).privateKey, { kid: 'k1', expiresIn: 60 });

  it('takes the tenant and workspace from an operator or agent token when no flag or variable names them', async () => {
    expect(scopeOf({}, {}, await token(operator))).toEqual({ tenant: 'acme', workspace: 'main' });
    expect(scopeOf({}, { TOOLPLANE_TENANT: '', TOOLPLANE_WORKSPACE: '' }, await token(agent))).toEqual({ tenant: 'globex', workspace: 'prod' });
  });

  it('lets a flag, then a variable, win over the token, even one that disagrees (the service refuses it)', async () => {
    const agentToken = await token(agent);
    expect(scopeOf({ tenant: 'acme', workspace: 'dev' }, { TOOLPLANE_TENANT: 'initech', TOOLPLANE_WORKSPACE: 'qa' }, agentToken)).toEqual({ tenant: 'acme', workspace: 'dev' });
    expect(scopeOf({}, { TOOLPLANE_TENANT: 'initech' }, agentToken)).toEqual({ tenant: 'initech', workspace: 'prod' });
    expect(scopeOf({ workspace: 'qa' }, {}, agentToken)).toEqual({ tenant: 'globex', workspace: 'qa' });
  });

  it('asks for a workspace when an operator token covers several, naming them', async () => {
    const several = await token({ ...operator, workspaces: ['main', 'ops'] });
    expect(() => scopeOf({}, {}, several)).toThrow(expect.objectContaining({ code: 'INVALID_ARGUMENT', message: 'no workspace: the token covers main, ops: pass --workspace or set TOOLPLANE_WORKSPACE' }));
    expect(scopeOf({ workspace: 'ops' }, {}, several)).toEqual({ tenant: 'acme', workspace: 'ops' });
  });

  it('asks for a tenant when neither flag, variable nor a readable token names one', () => {
    const noTenant: unknown = expect.objectContaining({ code: 'INVALID_ARGUMENT', message: 'no tenant: pass --tenant, set TOOLPLANE_TENANT, or use a token that names one' });
    expect(() => scopeOf({}, {})).toThrow(noTenant);
    expect(() => scopeOf({ workspace: 'main' }, {}, 'opaque')).toThrow(noTenant);
  });

  it('derives the default inbox prefix from the token’s scope too', async () => {
    expect(inboxPrefixOf({}, {}, await token(agent))).toBe('_INBOX_globex.prod');
  });
});

describe('createContext', () => {
  const io = (env: Record<string, string>) => ({ stdout: () => undefined, stderr: () => undefined, readStdin: () => Promise.resolve(''), env });
  const operatorToken = async (tenant: string, workspace: string) =>
    issueToken({ kind: 'human', tenant, workspaces: [workspace], principal: 'user:ada@acme.example', roles: [] }, (await generateSigningKeyPair('k1')).privateKey, { kid: 'k1', expiresIn: 60 });

  it('defaults the scope from $TOOLPLANE_TOKEN, and from the token a command read once it has read one', async () => {
    const context = createContext(io({ TOOLPLANE_TOKEN: await operatorToken('acme', 'main') }), {});
    expect(context.scope()).toEqual({ tenant: 'acme', workspace: 'main' });
    context.useToken?.(await operatorToken('globex', 'ops'));
    expect(context.scope()).toEqual({ tenant: 'globex', workspace: 'ops' });
  });
});
