import { ToolplaneError, auditCommandSchemas, sleep, type ProjectionStatusReply } from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import type { CliContext } from '../context.js';
import { operatorHeaders, withToken, type TokenOptions } from '../operator-token.js';
import { formatFields } from '../output.js';

function statusFields(status: ProjectionStatusReply): string {
  const rebuild = status.rebuild;
  return formatFields([
    ['live generation', status.live],
    ['previous generation', status.previous],
    ['rebuild', rebuild === undefined ? undefined : `generation ${rebuild.generation}: ${rebuild.state}`],
    ['started at', rebuild?.startedAt],
    ['switched at', rebuild?.switchedAt],
    ['switch sequence', rebuild?.switchSequence],
    ['finished at', rebuild?.finishedAt],
    ['message', rebuild?.message],
  ]);
}

async function waitForRebuild(ctx: CliContext, auth: { headers: Record<string, string> }, generation: number, timeoutMs: number): Promise<ProjectionStatusReply> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = await ctx.call('audit', 'projectionStatus', auditCommandSchemas.projectionStatus, {}, auth);
    if (status.rebuild?.generation !== generation || status.rebuild.state !== 'Running') return status;
    if (Date.now() > deadline) throw new ToolplaneError('TIMEOUT', `the rebuild into generation ${generation} is still running after ${timeoutMs} ms`);
    await sleep(500, undefined, 'waiting for the rebuild');
  }
}

/** `toolplane projector rebuild|status`: rebuild the audit projections from the events stream. */
export const projectorCommands: CommandGroup = (program, context) => {
  const projector = program.command('projector').description('Operate the audit projector (its projections are rebuilt from the events stream).');

  withToken(projector.command('rebuild'))
    .description('replay the events stream from its first sequence into fresh projections and switch over once caught up')
    .option('--wait', 'wait until the rebuild has completed (or failed)')
    .option('--wait-timeout <ms>', 'how long --wait waits (default 600000)', (value: string) => {
      const ms = Number(value);
      if (!Number.isInteger(ms) || ms <= 0) throw new ToolplaneError('INVALID_ARGUMENT', '--wait-timeout must be a positive number of milliseconds');
      return ms;
    })
    .action(async (options: TokenOptions & { wait?: boolean; waitTimeout?: number }) => {
      const ctx = context();
      const auth = await operatorHeaders(ctx, options);
      let status = await ctx.call('audit', 'rebuildProjections', auditCommandSchemas.rebuildProjections, {}, auth);
      const generation = status.rebuild?.generation;
      if (options.wait === true && generation !== undefined) status = await waitForRebuild(ctx, auth, generation, options.waitTimeout ?? 600_000);
      ctx.print(status, () => statusFields(status));
      if (options.wait === true && status.rebuild?.state === 'Failed') throw new ToolplaneError('INTERNAL', `the rebuild into generation ${generation} failed: ${status.rebuild.message ?? 'no reason given'}`);
    });

  withToken(projector.command('status'))
    .description('show the live projection generation and the latest rebuild')
    .action(async (options: TokenOptions) => {
      const ctx = context();
      const status = await ctx.call('audit', 'projectionStatus', auditCommandSchemas.projectionStatus, {}, await operatorHeaders(ctx, options));
      ctx.print(status, () => statusFields(status));
    });
};
