import type { Command } from 'commander';
import { ToolplaneError, auditCommandSchemas, auditOperations, commandSubject } from '@toolplane/contracts';
import { request } from '@toolplane/messaging';
import type { CommandGroup } from '../command-group.js';
import type { GlobalOptions } from '../context.js';
import { bearerHeaders } from '@toolplane/auth';
import { operatorToken, unverifiedClaims, withToken, type TokenOptions } from '../operator-token.js';
import { formatFields } from '../output.js';

// The audit chain is kept per tenant; a request still travels on a workspace's subject, so without a workspace it
// goes on the first workspace the operator token names (the projector checks the token against that scope), and
// on the tenant-level placeholder `_` if the token names none that can be read.
const tenantWorkspace = '_';

/** `toolplane audit verify`: walks a tenant's hash-chained audit record and reports the first break. */
export const auditCommands: CommandGroup = (program, context) => {
  const audit = program.command('audit').description("Check the tenant's tamper-evident audit record.");

  withToken(audit.command('verify'))
    .description("walk the tenant's audit chain from its first entry; exit 1 and name the entry if it is broken")
    .action(async (options: TokenOptions, command: Command) => {
      const ctx = context();
      const globals = command.optsWithGlobals<GlobalOptions>();
      const token = await operatorToken(ctx, options);
      const tenant = globals.tenant ?? (ctx.io.env['TOOLPLANE_TENANT'] || undefined) ?? unverifiedClaims(token).tenant;
      if (!tenant) throw new ToolplaneError('INVALID_ARGUMENT', 'no tenant: pass --tenant, set TOOLPLANE_TENANT, or use a token that names one');
      const workspace = globals.workspace ?? ctx.io.env['TOOLPLANE_WORKSPACE'] ?? unverifiedClaims(token).workspaces?.[0] ?? tenantWorkspace;
      const timeoutMs = Number(globals.timeout ?? ctx.io.env['TOOLPLANE_TIMEOUT_MS'] ?? 60_000);
      const schemas = auditCommandSchemas.verifyChain;
      const reply = await request(await ctx.messaging(), {
        subject: commandSubject({ tenant, workspace }, 'audit', auditOperations.verifyChain),
        requestSchema: schemas.request,
        replySchema: schemas.reply,
        body: {},
        timeoutMs,
        headers: bearerHeaders(token),
      });
      ctx.print(reply, () =>
        formatFields([
          ['tenant', reply.tenant],
          ['verdict', reply.ok ? 'intact' : 'BROKEN'],
          ['entries read', reply.entries],
          ['verified through', reply.verifiedThrough],
          ['head hash', reply.headHash],
          ...(reply.firstBreak === undefined
            ? []
            : ([
                ['break at', reply.firstBreak.position],
                ['break', reply.firstBreak.kind],
                ['entry', reply.firstBreak.entryId],
                ['event', reply.firstBreak.eventId],
                ['detail', reply.firstBreak.message],
              ] as const)),
        ]),
      );
      // In text, a broken chain fails the command; with --json the document says so (`ok`) and stays the only output.
      if (reply.firstBreak !== undefined && !ctx.json) {
        throw new ToolplaneError('CONFLICT', `the audit chain of ${reply.tenant} is broken at entry ${reply.firstBreak.position} (${reply.firstBreak.kind})`);
      }
    });
};
