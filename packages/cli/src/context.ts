import type { z } from 'zod';
import { ToolplaneError, commandSubject, type CommandService, type Scope } from '@toolplane/contracts';
import { defaultInboxPrefix } from '@toolplane/client';
import { decodeTokenClaims } from '@toolplane/auth';
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
  /** The scope whose subject the request travels on, instead of the command's. */
  readonly scope?: Scope;
}

/** What a command runs with: the scope, a NATS connection made on first use, and the output. */
export interface CliContext {
  readonly io: CliIo;
  readonly json: boolean;
  /**
   * The scope of the command: --tenant/--workspace, else TOOLPLANE_TENANT/TOOLPLANE_WORKSPACE, else what the token the
   * command sends names (see scopeOf). INVALID_ARGUMENT when it cannot be told.
   */
  readonly scope: () => Scope;
  /**
   * Records the token the command sends (readToken does), so the scope can default to the tenant and workspace it
   * names. Contexts of unit tests, whose scope is fixed, may leave it out.
   */
  readonly useToken?: (token: string) => void;
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
 * The scope a command runs in. Each part is the flag, else its environment variable, else what the token names: an
 * agent context token its tenant and workspace, an operator token its tenant and its workspace when it covers just one.
 * The token is read without verifying it (the service does, and refuses a flag the token does not cover, so a flag
 * that disagrees with the token is still sent as given). INVALID_ARGUMENT when a part cannot be told.
 */
export function scopeOf(options: GlobalOptions, env: CliIo['env'], token?: string): Scope {
  const claims = token === undefined ? undefined : decodeTokenClaims(token);
  const tenant = options.tenant ?? nonEmpty(env['TOOLPLANE_TENANT']) ?? claims?.tenant;
  if (tenant === undefined) throw new ToolplaneError('INVALID_ARGUMENT', 'no tenant: pass --tenant, set TOOLPLANE_TENANT, or use a token that names one');
  const workspace = options.workspace ?? nonEmpty(env['TOOLPLANE_WORKSPACE']) ?? (claims?.kind === 'agent' ? claims.workspace : claims?.workspaces.length === 1 ? claims.workspaces[0] : undefined);
  if (workspace === undefined) {
    const covered = claims?.kind === 'human' ? `: the token covers ${claims.workspaces.join(', ')}` : '';
    throw new ToolplaneError('INVALID_ARGUMENT', `no workspace${covered}: pass --workspace or set TOOLPLANE_WORKSPACE`);
  }
  return { tenant, workspace };
}

function nonEmpty(value: string | undefined): string | undefined {
  return value === undefined || value === '' ? undefined : value;
}

/**
 * The token a command's scope defaults from when it has not read one yet: $TOOLPLANE_TOKEN (an operator's), else
 * $TOOLPLANE_AGENT_TOKEN.
 */
function tokenOfEnvironment(env: CliIo['env']): string | undefined {
  return nonEmpty(env['TOOLPLANE_TOKEN']?.trim()) ?? nonEmpty(env['TOOLPLANE_AGENT_TOKEN']?.trim());
}

/**
 * The inbox prefix the CLI connects with: --inbox-prefix, else TOOLPLANE_INBOX_PREFIX, else the agent-runtime SDK's
 * default for the tenant and workspace when both are known (`_INBOX_<tenant>.<workspace>`, what a tenant's NATS user
 * may subscribe to; from flags, environment or `token`, as scopeOf), else none (NATS's `_INBOX`). A malformed one is
 * INVALID_ARGUMENT.
 */
export function inboxPrefixOf(options: GlobalOptions, env: CliIo['env'], token?: string): string | undefined {
  const given = options.inboxPrefix ?? env['TOOLPLANE_INBOX_PREFIX'];
  if (given !== undefined && given !== '') {
    try {
      return checkInboxPrefix(given);
    } catch (error) {
      const setting = options.inboxPrefix === undefined ? 'TOOLPLANE_INBOX_PREFIX' : '--inbox-prefix';
      throw new ToolplaneError('INVALID_ARGUMENT', `${setting}: ${error instanceof Error ? error.message : String(error)}`);
    }
  }
  try {
    return defaultInboxPrefix(scopeOf(options, env, token));
  } catch {
    return undefined;
  }
}

/** Builds a command's context from the global flags, falling back to TOOLPLANE_* environment variables. */
export function createContext(io: CliIo, options: GlobalOptions): CliContext {
  const natsUrl = options.nats ?? io.env['TOOLPLANE_NATS_URL'] ?? io.env['NATS_URL'] ?? 'nats://127.0.0.1:4222';
  const timeoutMs = Number(options.timeout ?? io.env['TOOLPLANE_TIMEOUT_MS'] ?? 10_000);
  let connecting: Promise<Messaging> | undefined;
  let commandToken: string | undefined;
  const token = () => commandToken ?? tokenOfEnvironment(io.env);
  const messaging = () => {
    connecting ??= (async () => {
      const inboxPrefix = inboxPrefixOf(options, io.env, token());
      return connectMessaging({ url: natsUrl, name: 'toolplane-cli', maxReconnectAttempts: 0, ...(inboxPrefix === undefined ? {} : { inboxPrefix }) });
    })();
    return connecting;
  };
  const scope = (): Scope => scopeOf(options, io.env, token());
  if (!Number.isInteger(timeoutMs) || timeoutMs <= 0) throw new ToolplaneError('INVALID_ARGUMENT', '--timeout must be a positive number of milliseconds');
  return {
    io,
    json: options.json === true,
    scope,
    useToken: (used) => {
      commandToken = used;
    },
    messaging,
    call: async (service, operation, schemas, body, callOptions = {}) =>
      request(await messaging(), {
        subject: commandSubject(callOptions.scope ?? scope(), service, operation),
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
