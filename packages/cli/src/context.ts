import type { z } from 'zod';
import { ToolplaneError, commandSubject, type CommandService, type Scope } from '@toolplane/contracts';
import { defaultInboxPrefix } from '@toolplane/client';
import { checkInboxPrefix, connectMessaging, request, type Messaging } from '@toolplane/messaging';
import type { CliIo } from './output.js';

/** The global flags every command shares. */
export interface GlobalOptions {
  readonly nats?: string;
  readonly tenant?: string;
  readonly workspace?: string;
  readonly json?: boolean;
  readonly timeout?: string;
  readonly inboxPrefix?: string;
}

/** Extras of one call. */
export interface CallOptions {
  readonly headers?: Readonly<Record<string, string>>;
}

/** What a command runs with: the scope, a NATS connection made on first use, and the output. */
export interface CliContext {
  readonly io: CliIo;
  readonly json: boolean;
  readonly scope: () => Scope;
  /**
   * Sends a request/reply command to a service in the current scope and returns its typed answer. `headers`
   * carry credentials (an operator token as `Authorization: Bearer …`), so they never travel in a logged body.
   */
  readonly call: <Req extends z.ZodType, Res extends z.ZodType>(
    service: CommandService,
    operation: string,
    schemas: { readonly request: Req; readonly reply: Res },
    body: z.input<Req>,
    options?: CallOptions,
  ) => Promise<z.output<Res>>;
  /** The NATS connection, connected on first use. */
  readonly messaging: () => Promise<Messaging>;
  /** Prints one JSON document with --json, otherwise the human-readable text. */
  readonly print: (data: unknown, human: () => string) => void;
  readonly close: () => Promise<void>;
}

/**
 * The inbox prefix the CLI connects with: --inbox-prefix, else TOOLPLANE_INBOX_PREFIX, else the agent-runtime SDK's
 * default for the tenant and workspace when both are known (`_INBOX_<tenant>.<workspace>`, what a tenant's NATS user
 * may subscribe to), else none (NATS's `_INBOX`). A malformed one is INVALID_ARGUMENT.
 */
export function inboxPrefixOf(options: GlobalOptions, env: CliIo['env']): string | undefined {
  const given = options.inboxPrefix ?? env['TOOLPLANE_INBOX_PREFIX'];
  if (given !== undefined && given !== '') {
    try {
      return checkInboxPrefix(given);
    } catch (error) {
      const setting = options.inboxPrefix === undefined ? 'TOOLPLANE_INBOX_PREFIX' : '--inbox-prefix';
      throw new ToolplaneError('INVALID_ARGUMENT', `${setting}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  const tenant = options.tenant ?? env['TOOLPLANE_TENANT'];
  const workspace = options.workspace ?? env['TOOLPLANE_WORKSPACE'];
  return tenant && workspace ? defaultInboxPrefix({ tenant, workspace }) : undefined;
}

/** Builds a command's context from the global flags, falling back to TOOLPLANE_* environment variables. */
export function createContext(io: CliIo, options: GlobalOptions): CliContext {
  const natsUrl = options.nats ?? io.env['TOOLPLANE_NATS_URL'] ?? io.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';
  const timeoutMs = Number(options.timeout ?? io.env['TOOLPLANE_TIMEOUT_MS'] ?? 10_000);
  let connecting: Promise<Messaging> | undefined;
  const messaging = () => {
    connecting ??= (async () => {
      const inboxPrefix = inboxPrefixOf(options, io.env);
      return connectMessaging({ url: natsUrl, name: 'toolplane-cli', maxReconnectAttempts: 0, ...(inboxPrefix === undefined ? {} : { inboxPrefix }) });
    })();
    return connecting;
  };
  const scope = (): Scope => {
    const tenant = options.tenant ?? io.env['TOOLPLANE_TENANT'];
    const workspace = options.workspace ?? io.env['TOOLPLANE_WORKSPACE'];
    if (!tenant) throw new ToolplaneError('INVALID_ARGUMENT', 'no tenant: pass --tenant or set TOOLPLANE_TENANT');
    if (!workspace) throw new ToolplaneError('INVALID_ARGUMENT', 'no workspace: pass --workspace or set TOOLPLANE_WORKSPACE');
    return { tenant, workspace };
  };
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new ToolplaneError('INVALID_ARGUMENT', '--timeout must be a positive number of milliseconds');
  return {
    io,
    json: options.json === true,
    scope,
    messaging,
    call: async (service, operation, schemas, body, callOptions = {}) =>
      request(await messaging(), {
        subject: commandSubject(scope(), service, operation),
        requestSchema: schemas.request,
        replySchema: schemas.reply,
        body,
        timeoutMs,
        ...(callOptions.headers === undefined ? {} : { headers: callOptions.headers }),
      }),
    print: (data, human) => io.stdout(options.json === true ? `${JSON.stringify(data, null, 2)}\n` : human()),
    close: async () => {
      if (connecting) await (await connecting.catch(() => undefined))?.drain();
    },
  };
}
