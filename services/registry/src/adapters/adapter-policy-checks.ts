import { adapterCommandSchemas, adapterOperations, commandSubject, type PublicationConflict, type Scope } from '@toolplane/contracts';
import { request, type Messaging } from '@toolplane/messaging';
import type { PolicyChecks } from '../app/registry-context.js';

// The tool adapter's answers the registry asks for (service to service, like the adapter's getServer of the
// registry): agent profiles and policy bundles are the adapter's, so whether a bundle exists and which profiles a
// published tool conflicts with can only be learnt from it. Bounded by `timeoutMs`; a failure is the caller's to
// report (a bind stands either way).

/** PolicyChecks over request/reply to the tool adapter. */
export function adapterPolicyChecks(messaging: Messaging, options: { readonly timeoutMs: number }): PolicyChecks {
  return {
    async policyBundleExists(scope: Scope, name: string, signal?: AbortSignal): Promise<boolean> {
      const schemas = adapterCommandSchemas.checkPolicyBundle;
      const reply = await request(messaging, {
        subject: commandSubject(scope, 'adapter', adapterOperations.checkPolicyBundle),
        requestSchema: schemas.request,
        replySchema: schemas.reply,
        body: { name },
        timeoutMs: options.timeoutMs,
        ...(signal ? { signal } : {}),
      });
      return reply.exists;
    },
    async publicationConflicts(scope, tool, signal): Promise<PublicationConflict[]> {
      const schemas = adapterCommandSchemas.checkToolPublication;
      const reply = await request(messaging, {
        subject: commandSubject(scope, 'adapter', adapterOperations.checkToolPublication),
        requestSchema: schemas.request,
        replySchema: schemas.reply,
        body: tool,
        timeoutMs: options.timeoutMs,
        ...(signal ? { signal } : {}),
      });
      return reply.conflicts;
    },
  };
}
