// The one port through which the console reads and decides: a request/reply command to the owning service, sent
// with the signed-in operator's own token, so the service authorizes it exactly as it would the CLI's.
import type { z } from 'zod';
import type { CommandService, Scope } from '@toolplane/contracts';

/** One command to a service of a scope. */
export interface ServiceRequest<Req extends z.ZodType, Res extends z.ZodType> {
  readonly scope: Scope;
  readonly service: CommandService;
  readonly operation: string;
  readonly schemas: { readonly request: Req; readonly reply: Res };
  readonly body: z.input<Req>;
  /** The operator token; it travels only in the Authorization header. */
  readonly token: string;
  readonly signal: AbortSignal;
  /** Instead of the console's request timeout (the audit chain walk takes longer). */
  readonly timeoutMs?: number;
}

/** Sends a command and returns its typed reply, or throws the service's typed error. */
export type ServiceCaller = <Req extends z.ZodType, Res extends z.ZodType>(request: ServiceRequest<Req, Res>) => Promise<z.output<Res>>;
