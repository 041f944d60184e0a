import { DEFAULT_SANDBOX_PROFILE, canonicalHash, toWireError, type IsoDateTime, type SandboxKind, type SandboxLeaseInfo } from '@toolplane/contracts';
import { findBwrap, type McpTarget, type StdioSandboxMode } from '@toolplane/mcp';
import type { StageOutcome } from '../core/invocation-pipeline.js';

// The SANDBOX stage: which sandbox the call's server runs in. A stdio server is spawned once per pooled session (by
// the MCP pool, at the first call of a target), in the sandbox its registration's profile describes; the lease of a
// call names that sandbox (kind, profile name and hash, network mode, limits), so receipts and events say where the
// call ran. With the sandbox on and bwrap missing, the call is refused here, before anything is started.

/** How the adapter sandboxes stdio servers (MCP_STDIO_SANDBOX). */
export interface StdioSandboxSetting {
  readonly mode: StdioSandboxMode;
  /** Where bwrap is (default: on the system directories). */
  readonly bwrapPath?: string | undefined;
}

/** What a lease records about the sandbox of a target. */
export function sandboxLeaseOf(target: McpTarget | undefined, mode: StdioSandboxMode): { kind: SandboxKind; info: SandboxLeaseInfo } | undefined {
  if (target?.transport !== 'stdio') return undefined;
  const profile = target.sandbox ?? DEFAULT_SANDBOX_PROFILE;
  const { networkHostApprovedAt: _at, ...pinned } = profile;
  return {
    kind: mode === 'bubblewrap' ? 'Bubblewrap' : 'Process',
    info: { profileName: profile.name, profileHash: canonicalHash(pinned), network: profile.network, limits: profile.limits },
  };
}

/** Leases the sandbox of a call whose (brokered) target is `target`. */
export async function leaseSandbox(setting: StdioSandboxSetting, target: McpTarget | undefined, lease: { sandboxLeaseId: string; expiresAt: IsoDateTime }): Promise<Extract<StageOutcome, { step: 'SANDBOX' }>> {
  const sandbox = sandboxLeaseOf(target, setting.mode);
  if (sandbox?.kind === 'Bubblewrap') {
    try {
      await findBwrap(setting.bwrapPath);
    } catch (error) {
      const wire = toWireError(error);
      return { step: 'SANDBOX', result: 'denied', failure: { code: wire.code, message: wire.message, retryable: wire.retryable, providerErrorType: 'SandboxUnavailable' } };
    }
  }
  return { step: 'SANDBOX', result: 'leased', ...lease, ...(sandbox === undefined ? {} : { sandbox }) };
}
