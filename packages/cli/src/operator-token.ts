import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { ToolplaneError } from '@toolplane/contracts';
import { bearerHeaders, decodeTokenClaims } from '@toolplane/auth';
import type { CliContext } from './context.js';

// The operator token of the commands that act as a human operator (approvals, calls, policies, audit, projector):
// read from --token-file or $TOOLPLANE_TOKEN, sent only as an Authorization header, never printed. `readToken` also
// reads the agent context token of `invoke` (from $TOOLPLANE_AGENT_TOKEN).

/** The option every operator command takes. */
export interface TokenOptions {
  readonly tokenFile?: string;
}

/** Adds `--token-file` to a command. */
export function withToken(command: Command): Command {
  return command.option('--token-file <path>', 'file holding the operator token (default: $TOOLPLANE_TOKEN)');
}

/** Where a command's token comes from when no --token-file is given, and what the token is called in errors. */
export interface TokenSource {
  /** The environment variable holding the token, e.g. `TOOLPLANE_TOKEN`. */
  readonly envVar: string;
  /** The token's name in an error, e.g. `operator token`. */
  readonly kind: string;
}

/**
 * A token: the file named by `tokenFile` (trimmed), else the environment variable of `source`; from then on the
 * context's scope defaults to what it names. INVALID_ARGUMENT when the file cannot be read, AUTHENTICATION_FAILED when
 * there is no token; no error ever holds the token.
 */
export async function readToken(context: CliContext, tokenFile: string | undefined, source: TokenSource): Promise<string> {
  let token: string | undefined;
  if (tokenFile !== undefined) {
    try {
      token = (await readFile(tokenFile, 'utf8')).trim();
    } catch {
      throw new ToolplaneError('INVALID_ARGUMENT', `cannot read the token file ${tokenFile}`);
    }
  } else {
    token = context.io.env[source.envVar]?.trim();
  }
  if (!token) throw new ToolplaneError('AUTHENTICATION_FAILED', `no ${source.kind}: set ${source.envVar} or pass --token-file`);
  // The command's scope defaults to the tenant and workspace this token names.
  context.useToken?.(token);
  return token;
}

/**
 * The operator token: the file named by --token-file, else $TOOLPLANE_TOKEN. It only ever goes into a request
 * header; it is never printed, not even in an error.
 */
export function operatorToken(context: CliContext, options: TokenOptions): Promise<string> {
  return readToken(context, options.tokenFile, { envVar: 'TOOLPLANE_TOKEN', kind: 'operator token' });
}

/** The request headers that carry the operator token. */
export async function operatorHeaders(context: CliContext, options: TokenOptions): Promise<{ headers: Record<string, string> }> {
  return { headers: bearerHeaders(await operatorToken(context, options)) };
}

/**
 * What a token says about its holder, read without verifying it (the services verify): its tenant, principal and
 * workspaces, for defaults such as the workspace a tenant-level request travels on. Empty when it cannot be read.
 */
export function unverifiedClaims(token: string): { readonly tenant?: string; readonly principal?: string; readonly workspaces?: readonly string[] } {
  const claims = decodeTokenClaims(token);
  if (claims === undefined) return {};
  return { tenant: claims.tenant, principal: claims.principal, workspaces: claims.kind === 'human' ? claims.workspaces : [claims.workspace] };
}
