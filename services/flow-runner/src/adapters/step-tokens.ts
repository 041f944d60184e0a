import { createPrivateKey, type KeyObject } from 'node:crypto';
import { z } from 'zod';
import { issueToken } from '@toolplane/auth';
import type { Scope } from '@toolplane/contracts';

// The context tokens a run's steps are called with. FlowRunner signs them with its own key (FLOW_RUNNER_SIGNING_KEY;
// the adapter trusts its public half through TOOLPLANE_TRUSTED_KEYS), for the run's principal and the agent
// `flow.<flowId>` at revision `<flowVersion>`: an operator governs what a flow's steps may call with an ordinary
// agent profile. A token lives a little longer than what is left of the run, so a step call that starts near the end
// is not refused for an expired token while the run may still use its answer.

/** How much longer than the run's remaining time a step token stays valid. */
export const STEP_TOKEN_MARGIN_S = 60;

/** FlowRunner's parsed signing key: the private key and the key id the adapter looks its public half up by. */
export interface StepSigningKey {
  readonly kid: string;
  readonly privateKey: KeyObject;
}

function importStepKey(text: string): StepSigningKey | string {
  let jwk: unknown;
  try {
    jwk = JSON.parse(text);
  } catch {
    return 'is not JSON (a private Ed25519 JWK with kid: {"kty":"OKP","crv":"Ed25519","x":…,"d":…,"kid":…})';
  }
  if (typeof jwk !== 'object' || jwk === null || Array.isArray(jwk)) return 'must be a JSON object (a private Ed25519 JWK with kid)';
  const fields = jwk as Record<string, unknown>;
  if (fields['kty'] !== 'OKP' || fields['crv'] !== 'Ed25519') return 'must be an Ed25519 JWK (kty OKP, crv Ed25519)';
  if (typeof fields['d'] !== 'string') return 'is a JWK without private key material (d)';
  const kid = fields['kid'];
  if (typeof kid !== 'string' || !/^[!-~]{1,128}$/.test(kid)) return 'needs a kid of 1-128 printable characters (the adapter finds the public key by it)';
  try {
    return { kid, privateKey: createPrivateKey({ key: fields, format: 'jwk' }) };
  } catch {
    return 'cannot be read as an Ed25519 private key';
  }
}

/** FLOW_RUNNER_SIGNING_KEY as a zod setting: required, parsed once at start-up, never echoed. */
export const StepSigningKeySetting = z
  .string({ error: (issue) => (issue.input === undefined ? 'is missing (a private Ed25519 JWK with kid, whose public half the tool adapter trusts)' : 'must be a string') })
  .transform((text, ctx) => {
    const parsed = importStepKey(text.trim());
    if (typeof parsed === 'string') {
      ctx.addIssue({ code: 'custom', message: parsed });
      return z.NEVER;
    }
    return parsed;
  });

/** Who a step is called for: the run's scope and principal, and the flow version the agent identity names. */
export interface StepTokenSubject {
  readonly scope: Scope;
  readonly principal: string;
  readonly flowId: string;
  readonly flowVersion: number;
}

/** Issues the context tokens of step calls. */
export interface StepTokens {
  /** A token for `subject` valid for `remainingMs` plus a margin (at least the margin). */
  issue(subject: StepTokenSubject, remainingMs: number): Promise<string>;
}

/** The agent a flow's steps run as. */
export function flowAgentId(flowId: string): string {
  return `flow.${flowId}`;
}

/** Signs step tokens with FlowRunner's key; `now` is the issuing clock (default the system's). */
export function stepTokenIssuer(key: StepSigningKey, now: () => Date = () => new Date()): StepTokens {
  return {
    issue: (subject, remainingMs) =>
      issueToken(
        {
          kind: 'agent',
          tenant: subject.scope.tenant,
          workspace: subject.scope.workspace,
          principal: subject.principal,
          agentId: flowAgentId(subject.flowId),
          agentRevision: String(subject.flowVersion),
        },
        key.privateKey,
        { kid: key.kid, expiresIn: Math.max(0, Math.ceil(remainingMs / 1000)) + STEP_TOKEN_MARGIN_S, now: now() },
      ),
  };
}
