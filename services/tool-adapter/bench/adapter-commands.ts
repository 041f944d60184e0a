// The benchmark speaks to the adapter only through its public request/reply contracts (`adapterCommandSchemas`):
// provisioning (put agent profile, put tenant policy, as an operator) and the lookup by idempotency key (as the agent,
// as @toolplane/client does to recover a lost reply), so it keeps working however the adapter stores them.
import {
  adapterCommandSchemas,
  adapterOperations,
  commandSubject,
  hasErrorCode,
  type AgentProfileInput,
  type LookupInvocationReply,
  type Scope,
  type TenantPolicyInput,
} from '@toolplane/contracts';
import { bearerHeaders } from '@toolplane/auth';
import { request, type Messaging } from '@toolplane/messaging';

const timeoutMs = 15_000;

/** Creates or replaces the agent profile, as the holder of the operator token `adminToken`. */
export function putAgentProfile(messaging: Messaging, scope: Scope, profile: AgentProfileInput, adminToken: string): Promise<unknown> {
  const schemas = adapterCommandSchemas.putAgentProfile;
  return request(messaging, {
    subject: commandSubject(scope, 'adapter', adapterOperations.putAgentProfile),
    requestSchema: schemas.request,
    replySchema: schemas.reply,
    body: { profile },
    timeoutMs,
    headers: bearerHeaders(adminToken),
  });
}

/** Creates or replaces the policy of the scope's tenant, as the holder of the operator token `adminToken`. */
export function putTenantPolicy(messaging: Messaging, scope: Scope, policy: TenantPolicyInput, adminToken: string): Promise<unknown> {
  const schemas = adapterCommandSchemas.putTenantPolicy;
  return request(messaging, {
    subject: commandSubject(scope, 'adapter', adapterOperations.putTenantPolicy),
    requestSchema: schemas.request,
    replySchema: schemas.reply,
    body: { policy },
    timeoutMs,
    headers: bearerHeaders(adminToken),
  });
}

/** Where the agent's call under `idempotencyKey` is; undefined when the adapter has none (NOT_FOUND). */
export async function lookupInvocation(messaging: Messaging, scope: Scope, contextToken: string, idempotencyKey: string): Promise<LookupInvocationReply | undefined> {
  const schemas = adapterCommandSchemas.lookupInvocation;
  try {
    return await request(messaging, {
      subject: commandSubject(scope, 'adapter', adapterOperations.lookupInvocation),
      requestSchema: schemas.request,
      replySchema: schemas.reply,
      body: { contextToken, idempotencyKey },
      timeoutMs,
    });
  } catch (error) {
    if (hasErrorCode(error) && error.code === 'NOT_FOUND') return undefined;
    throw error;
  }
}
