import { ToolplaneError, registryCommandSchemas, registryOperations, type InFlightPolicy, type Release, type ReleaseState } from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import { operatorHeaders, withToken, type TokenOptions } from '../operator-token.js';
import { formatFields, formatTable } from '../output.js';
import { parsePageLimit } from './policies.js';

// `toolplane releases …`: the workspace's releases in the registry. A server registered with `--release ID` belongs to
// that release; its tools are usable only while it is Published. Deprecating or revoking it retires them, and the
// in-flight policy says what happens to calls already accepted. Reads need an operator token; changes policy-admin.

/** `--in-flight finish|cancel-pending`. */
export function parseInFlight(value: string): InFlightPolicy {
  const normalized = value.trim().toLowerCase();
  if (normalized === 'finish') return 'FINISH';
  if (normalized === 'cancel-pending') return 'CANCEL_PENDING';
  throw new ToolplaneError('INVALID_ARGUMENT', '--in-flight must be finish (accepted calls finish) or cancel-pending (calls not yet executing are cancelled)');
}

/** `--state published|deprecated|revoked`. */
export function parseReleaseState(value: string): ReleaseState {
  const states: Record<string, ReleaseState> = { published: 'Published', deprecated: 'Deprecated', revoked: 'Revoked' };
  const state = states[value.trim().toLowerCase()];
  if (state === undefined) throw new ToolplaneError('INVALID_ARGUMENT', '--state must be published, deprecated or revoked');
  return state;
}

const inFlightText: Record<InFlightPolicy, string> = { FINISH: 'finish', CANCEL_PENDING: 'cancel-pending' };

/** A release as aligned `label: value` lines. */
export function releaseFields(release: Release): string {
  return formatFields([
    ['release', release.releaseId],
    ['state', release.state],
    ['in flight', release.inFlight === undefined ? undefined : inFlightText[release.inFlight]],
    ['reason', release.reason],
    ['published', `${release.publishedAt} by ${release.publishedBy}`],
    ['changed', release.changedAt === undefined ? undefined : `${release.changedAt}${release.changedBy === undefined ? '' : ` by ${release.changedBy}`}`],
    ['version', release.version],
  ]);
}

interface ChangeOptions extends TokenOptions {
  readonly inFlight?: InFlightPolicy;
  readonly reason?: string;
}

/** `toolplane releases publish|deprecate|revoke|get|list`: releases of the workspace. */
export const releasesCommands: CommandGroup = (program, context) => {
  const releases = program
    .command('releases')
    .description('Publish, deprecate and revoke releases: a server registered with --release ID is usable only while its release is Published (operator token; changes need policy-admin).');

  withToken(releases.command('publish'))
    .description('publish a release (Published); publishing a Published release again changes nothing')
    .argument('<id>', 'the release id')
    .action(async (releaseId: string, options: TokenOptions) => {
      const ctx = context();
      const reply = await ctx.call('registry', registryOperations.publishRelease, registryCommandSchemas.publishRelease, { releaseId }, await operatorHeaders(ctx, options));
      ctx.print(reply, () => `${reply.created ? 'published' : 'already published'}\n${releaseFields(reply.release)}`);
    });

  const change = (name: 'deprecate' | 'revoke', description: string, defaultInFlight: string) =>
    withToken(releases.command(name))
      .description(description)
      .argument('<id>', 'the release id')
      .option('--in-flight <policy>', `what happens to calls already accepted: finish or cancel-pending (default: ${defaultInFlight})`, parseInFlight)
      .option('--reason <text>', 'why (recorded with the release)')
      .action(async (releaseId: string, options: ChangeOptions) => {
        const ctx = context();
        const operation = name === 'deprecate' ? 'deprecateRelease' : 'revokeRelease';
        const body = { releaseId, ...(options.inFlight === undefined ? {} : { inFlight: options.inFlight }), ...(options.reason === undefined ? {} : { reason: options.reason }) };
        const reply = await ctx.call('registry', registryOperations[operation], registryCommandSchemas[operation], body, await operatorHeaders(ctx, options));
        ctx.print(reply, () => `${releaseFields(reply.release)}retired descriptors: ${reply.retiredDescriptors}\n`);
      });
  change('deprecate', 'deprecate a Published release: its tools are retired (ReleaseDeprecated); run it again to finish an interrupted retirement', 'finish');
  change('revoke', 'revoke a Published or Deprecated release for good: its tools are retired (ReleaseRevoked); run it again to finish an interrupted retirement', 'cancel-pending');

  withToken(releases.command('get'))
    .description('show a release')
    .argument('<id>', 'the release id')
    .action(async (releaseId: string, options: TokenOptions) => {
      const ctx = context();
      const reply = await ctx.call('registry', registryOperations.getRelease, registryCommandSchemas.getRelease, { releaseId }, await operatorHeaders(ctx, options));
      ctx.print(reply.release, () => releaseFields(reply.release));
    });

  withToken(releases.command('list'))
    .description('list the releases of the workspace, by id')
    .option('--state <state>', 'only releases in this state (published, deprecated, revoked)', parseReleaseState)
    .option('--limit <n>', 'at most this many (1-200, default 100)', parsePageLimit)
    .option('--after <cursor>', 'continue after the previous page (its "next" cursor)')
    .action(async (options: TokenOptions & { state?: ReleaseState; limit?: number; after?: string }) => {
      const ctx = context();
      const reply = await ctx.call(
        'registry',
        registryOperations.listReleases,
        registryCommandSchemas.listReleases,
        {
          ...(options.state === undefined ? {} : { state: options.state }),
          ...(options.limit === undefined ? {} : { limit: options.limit }),
          ...(options.after === undefined ? {} : { after: options.after }),
        },
        await operatorHeaders(ctx, options),
      );
      // The same page shape as every other list (`items`, `next`).
      ctx.print({ items: reply.releases, next: reply.next }, () => {
        const table = formatTable(
          ['RELEASE', 'STATE', 'IN FLIGHT', 'PUBLISHED BY', 'CHANGED AT', 'VERSION'],
          reply.releases.map((release) => [release.releaseId, release.state, release.inFlight === undefined ? undefined : inFlightText[release.inFlight], release.publishedBy, release.changedAt, release.version]),
        );
        return reply.next === null ? table : `${table}more: --after ${reply.next}\n`;
      });
    });
};
