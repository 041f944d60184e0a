import { describe, expect, it } from 'vitest';
import { PLATFORM_ADMIN_ROLE, POLICY_ADMIN_ROLE, registryOperations } from '@toolplane/contracts';
import { bearerHeaders, createTokenVerifier, generateSigningKeyPair, issueToken } from '@toolplane/auth';
import type { RegistryContext } from './app/registry-context.js';
import { registryHandlers } from './handlers.js';

// Who may ask what, as the handlers declare it, and what a registry without trusted keys answers.

describe('registry access', () => {
  it('changes (releases too) need policy-admin, an authentication exception platform-admin, reads any operator, getServer no token', () => {
    expect(Object.fromEntries(registryHandlers.map((handler) => [handler.operation, handler.access]))).toEqual({
      [registryOperations.register]: { kind: 'operator', role: POLICY_ADMIN_ROLE },
      [registryOperations.discover]: { kind: 'operator', role: POLICY_ADMIN_ROLE },
      [registryOperations.bind]: { kind: 'operator', role: POLICY_ADMIN_ROLE },
      [registryOperations.bindResource]: { kind: 'operator', role: POLICY_ADMIN_ROLE },
      [registryOperations.bindPrompt]: { kind: 'operator', role: POLICY_ADMIN_ROLE },
      [registryOperations.unbind]: { kind: 'operator', role: POLICY_ADMIN_ROLE },
      [registryOperations.retire]: { kind: 'operator', role: POLICY_ADMIN_ROLE },
      [registryOperations.grantException]: { kind: 'operator', role: PLATFORM_ADMIN_ROLE },
      [registryOperations.getServer]: { kind: 'service' },
      [registryOperations.listServers]: { kind: 'operator' },
      [registryOperations.listTools]: { kind: 'operator' },
      [registryOperations.getDescriptor]: { kind: 'operator' },
      [registryOperations.publishFlowTool]: { kind: 'operator', role: POLICY_ADMIN_ROLE },
      [registryOperations.retireFlowTool]: { kind: 'operator', role: POLICY_ADMIN_ROLE },
      [registryOperations.publishRelease]: { kind: 'operator', role: POLICY_ADMIN_ROLE },
      [registryOperations.deprecateRelease]: { kind: 'operator', role: POLICY_ADMIN_ROLE },
      [registryOperations.revokeRelease]: { kind: 'operator', role: POLICY_ADMIN_ROLE },
      [registryOperations.getRelease]: { kind: 'operator' },
      [registryOperations.listReleases]: { kind: 'operator' },
    });
  });

  it('without trusted keys every operator operation is AUTHENTICATION_FAILED before anything is touched', async () => {
    // A context whose every member throws: the refusal must come before any store, MCP or clock use.
    const untouchable = new Proxy({} as RegistryContext, {
      get: () => {
        throw new Error('the context was used');
      },
    });
    const verifier = createTokenVerifier({}, { clockToleranceSeconds: 30 });
    const key = await generateSigningKeyPair('acme-1');
    const token = await issueToken({ kind: 'human', tenant: 'acme', workspaces: ['main'], principal: 'user:ada', roles: [POLICY_ADMIN_ROLE, PLATFORM_ADMIN_ROLE] }, key.privateKey, {
      kid: key.kid,
      expiresIn: '5m',
    });
    const headers = Object.fromEntries(Object.entries(bearerHeaders(token)).map(([name, value]) => [name, [value]]));
    const signal = new AbortController().signal;
    for (const handler of registryHandlers.filter((candidate) => candidate.access.kind === 'operator')) {
      const refusal = await (handler.answer as (...args: unknown[]) => Promise<unknown>)(untouchable, verifier, { tenant: 'acme', workspace: 'main' }, {}, headers, signal).then(
        () => undefined,
        (error: unknown) => error as { code?: string; message?: string },
      );
      expect({ operation: handler.operation, code: refusal?.code, message: refusal?.message }).toEqual({
        operation: handler.operation,
        code: 'AUTHENTICATION_FAILED',
        message: 'token refused: no keys are trusted for tenant acme',
      });
    }
  });
});
