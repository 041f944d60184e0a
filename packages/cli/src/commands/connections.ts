import { readFile } from 'node:fs/promises';
import { Option } from 'commander';
import {
  ConnectionKind,
  ConnectionState,
  CredentialInput,
  ToolplaneError,
  secretBrokerContracts,
  secretBrokerOperations,
  type ConnectionView,
} from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import type { CliContext } from '../context.js';
import { operatorHeaders, withToken, type TokenOptions } from '../operator-token.js';
import { formatFields, formatTable } from '../output.js';

// `toolplane connections …`: credentials for tools, as an operator (token in $TOOLPLANE_TOKEN or --token-file; the
// broker records the token's principal as who created, rotated or revoked). A secret is read once, from standard
// input or a file, and sent to the broker; it is never taken from a flag (flags end up in shell history and process
// listings), never printed, and never part of an error: every message here names where the secret came from, not
// what it is.

interface SecretSource {
  readonly secretFile?: string;
  /** Declared only to refuse it with a message that does not repeat the value. */
  readonly secret?: string;
}

interface OAuth2Options {
  readonly tokenUrl?: string;
  readonly clientId?: string;
  readonly scope?: readonly string[];
}

async function readSecret(context: CliContext, options: SecretSource): Promise<string> {
  if (options.secret !== undefined) {
    throw new ToolplaneError('INVALID_ARGUMENT', 'secrets are never taken from flags: pipe the secret on standard input or pass --secret-file <path>');
  }
  let text: string;
  if (options.secretFile !== undefined) {
    try {
      text = await readFile(options.secretFile, 'utf8');
    } catch {
      throw new ToolplaneError('INVALID_ARGUMENT', `cannot read the secret file ${options.secretFile}`);
    }
  } else {
    text = await context.io.readStdin();
  }
  // One trailing line break is how files and `echo` end; anything else is part of the secret and validated as such.
  const secret = text.replace(/\r?\n$/, '');
  if (secret === '') throw new ToolplaneError('INVALID_ARGUMENT', `no secret ${options.secretFile === undefined ? 'on standard input' : `in ${options.secretFile}`}: pipe it in or pass --secret-file <path>`);
  return secret;
}

function parseKind(value: string): ConnectionKind {
  const kind = ConnectionKind.safeParse(value);
  if (!kind.success) throw new ToolplaneError('INVALID_ARGUMENT', `--kind must be one of ${ConnectionKind.options.join(', ')}`);
  return kind.data;
}

function parseState(value: string): ConnectionState {
  const state = ConnectionState.options.find((option) => option.toLowerCase() === value.toLowerCase());
  if (state === undefined) throw new ToolplaneError('INVALID_ARGUMENT', `--state must be one of ${ConnectionState.options.map((option) => option.toLowerCase()).join(', ')}`);
  return state;
}

function parseLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new ToolplaneError('INVALID_ARGUMENT', '--limit must be a whole number from 1 to 200');
  return limit;
}

/** Scopes may be given as several --scope flags or as one space-separated list, as OAuth writes them. */
function scopesOf(values: readonly string[] | undefined): string[] {
  return (values ?? []).flatMap((value) => value.split(' ')).filter((scope) => scope !== '');
}

/** A credential checked against its contract here, so a malformed secret is refused before it is sent; issues name fields, not values. */
function validated(credential: CredentialInput): CredentialInput {
  const parsed = CredentialInput.safeParse(credential);
  if (parsed.success) return parsed.data;
  const issues = parsed.error.issues.slice(0, 5).map((issue) => `credential.${issue.path.map(String).join('.')}: ${issue.message}`);
  throw new ToolplaneError('INVALID_ARGUMENT', `the secret is not a valid ${credential.kind} credential: ${issues.join('; ')}`);
}

/** The credential for a kind from the secret text: basic takes `username:password`, oauth2 the client secret. */
function credentialOf(kind: ConnectionKind, secret: string, oauth2: OAuth2Options, current?: ConnectionView): CredentialInput {
  const oauth2Only = oauth2.tokenUrl !== undefined || oauth2.clientId !== undefined || oauth2.scope !== undefined;
  if (kind !== 'oauth2-client-credentials' && oauth2Only) throw new ToolplaneError('INVALID_ARGUMENT', '--token-url, --client-id and --scope apply to oauth2-client-credentials connections only');
  switch (kind) {
    case 'api-key':
      return { kind, apiKey: secret };
    case 'bearer':
      return { kind, token: secret };
    case 'basic': {
      const colon = secret.indexOf(':');
      if (colon <= 0) throw new ToolplaneError('INVALID_ARGUMENT', 'a basic credential is given as username:password');
      return { kind, username: secret.slice(0, colon), password: secret.slice(colon + 1) };
    }
    case 'oauth2-client-credentials': {
      const tokenEndpoint = oauth2.tokenUrl ?? current?.oauth2?.tokenEndpoint;
      const clientId = oauth2.clientId ?? current?.oauth2?.clientId;
      if (tokenEndpoint === undefined) throw new ToolplaneError('INVALID_ARGUMENT', 'an oauth2-client-credentials connection needs --token-url');
      if (clientId === undefined) throw new ToolplaneError('INVALID_ARGUMENT', 'an oauth2-client-credentials connection needs --client-id');
      const scopes = oauth2.scope === undefined ? [...(current?.oauth2?.scopes ?? [])] : scopesOf(oauth2.scope);
      return { kind, tokenEndpoint, clientId, clientSecret: secret, scopes };
    }
  }
}

function connectionFields(connection: ConnectionView): string {
  return formatFields([
    ['id', connection.connectionId],
    ['name', connection.name],
    ['kind', connection.kind],
    ['state', connection.state],
    ['allowed tools', connection.allowedTools],
    ['description', connection.description],
    ['token url', connection.oauth2?.tokenEndpoint],
    ['client id', connection.oauth2?.clientId],
    ['scopes', connection.oauth2?.scopes],
    ['secret generation', connection.secretGeneration],
    ['key (KEK) id', connection.kekId],
    ['created', connection.createdAt],
    ['created by', connection.createdBy],
    ['rotated', connection.rotatedAt],
    ['rotated by', connection.rotatedBy],
    ['revoked', connection.revokedAt],
    ['revoked by', connection.revokedBy],
    ['revoke reason', connection.revokeReason],
    ['updated', connection.updatedAt],
  ]);
}

function secretOptions<T extends { addOption(option: Option): T; option(flags: string, description: string): T }>(command: T): T {
  return command
    .option('--secret-file <path>', 'read the secret from this file (default: standard input)')
    .addOption(new Option('--secret <value>', 'refused: secrets never go in flags').hideHelp());
}

function oauth2Options<T extends { option(flags: string, description: string): T }>(command: T): T {
  return command
    .option('--token-url <url>', 'oauth2-client-credentials: the token endpoint')
    .option('--client-id <id>', 'oauth2-client-credentials: the client id')
    .option('--scope <scope...>', 'oauth2-client-credentials: scopes to request');
}

/** `toolplane connections create|list|show|rotate|revoke`: write-only credentials that tools lease per invocation. */
export const connectionsCommands: CommandGroup = (program, context) => {
  const connections = program
    .command('connections')
    .description(
      'Manage connections: tool credentials, encrypted at rest, write-only, leased per invocation. Secrets come from standard input or --secret-file; an operator token is required (changes need the policy-admin role).',
    );

  oauth2Options(secretOptions(withToken(connections.command('create'))))
    .description('create a connection; the secret is read from standard input (or --secret-file), never from a flag')
    .requiredOption('--name <name>', 'name, unique in the workspace (usable wherever a connection ref is)')
    .requiredOption('--kind <kind>', `one of ${ConnectionKind.options.join(', ')} (basic reads username:password)`, parseKind)
    .requiredOption('--allow <toolId...>', 'the tool ids allowed to lease it')
    .option('--description <text>', 'what it is for')
    .action(async (options: TokenOptions & SecretSource & OAuth2Options & { name: string; kind: ConnectionKind; allow: string[]; description?: string }) => {
      const ctx = context();
      // The token first: a missing one is refused before the secret is read.
      const auth = await operatorHeaders(ctx, options);
      const credential = validated(credentialOf(options.kind, await readSecret(ctx, options), options));
      const view = await ctx.call(
        'secrets',
        secretBrokerOperations.createConnection,
        secretBrokerContracts.createConnection,
        { name: options.name, allowedTools: options.allow, credential, ...(options.description === undefined ? {} : { description: options.description }) },
        auth,
      );
      ctx.print(view, () => connectionFields(view));
    });

  withToken(connections.command('list'))
    .description('list the connections of the workspace by name (metadata only)')
    .option('--state <state>', 'only connections in this state (active, revoked)', parseState)
    .option('--limit <n>', 'at most this many (1-200, default 50)', parseLimit)
    .option('--after <cursor>', 'continue after the previous page (its "next" cursor)')
    .action(async (options: TokenOptions & { state?: ConnectionState; limit?: number; after?: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const page = await ctx.call(
        'secrets',
        secretBrokerOperations.listConnections,
        secretBrokerContracts.listConnections,
        {
          ...(options.state === undefined ? {} : { state: options.state }),
          ...(options.limit === undefined ? {} : { limit: options.limit }),
          ...(options.after === undefined ? {} : { after: options.after }),
        },
        auth,
      );
      ctx.print(page, () => {
        const table = formatTable(
          ['NAME', 'KIND', 'STATE', 'ALLOWED TOOLS', 'GEN', 'UPDATED', 'ID'],
          page.items.map((item) => [item.name, item.kind, item.state, item.allowedTools, item.secretGeneration, item.updatedAt, item.connectionId]),
        );
        return page.next === null ? table : `${table}more: --after ${page.next}\n`;
      });
    });

  withToken(connections.command('show'))
    .description('show one connection (metadata only: secrets are never returned)')
    .argument('<ref>', 'connection name or id')
    .action(async (connectionRef: string, options: TokenOptions) => {
      const ctx = context();
      const view = await ctx.call('secrets', secretBrokerOperations.showConnection, secretBrokerContracts.showConnection, { connectionRef }, await operatorHeaders(ctx, options));
      ctx.print(view, () => connectionFields(view));
    });

  oauth2Options(secretOptions(withToken(connections.command('rotate'))))
    .description('replace the credential of a connection (same kind); the new secret is read from standard input (or --secret-file)')
    .argument('<ref>', 'connection name or id')
    .action(async (connectionRef: string, options: TokenOptions & SecretSource & OAuth2Options) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const secret = await readSecret(ctx, options);
      const current = await ctx.call('secrets', secretBrokerOperations.showConnection, secretBrokerContracts.showConnection, { connectionRef }, auth);
      const credential = validated(credentialOf(current.kind, secret, options, current));
      const view = await ctx.call('secrets', secretBrokerOperations.rotateConnection, secretBrokerContracts.rotateConnection, { connectionRef: current.connectionId, credential }, auth);
      ctx.print(view, () => connectionFields(view));
    });

  withToken(connections.command('revoke'))
    .description('revoke a connection: its secret is deleted, its leases are revoked, no tool can lease it again')
    .argument('<ref>', 'connection name or id')
    .option('--reason <text>', 'why (recorded)')
    .action(async (connectionRef: string, options: TokenOptions & { reason?: string }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      const view = await ctx.call(
        'secrets',
        secretBrokerOperations.revokeConnection,
        secretBrokerContracts.revokeConnection,
        { connectionRef, ...(options.reason === undefined ? {} : { reason: options.reason }) },
        auth,
      );
      ctx.print(view, () => connectionFields(view));
    });
};
