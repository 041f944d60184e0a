import { readFile } from 'node:fs/promises';
import type { Command } from 'commander';
import type { z } from 'zod';
import {
  AgentProfileInput,
  PolicyBundleInput,
  TenantPolicyInput,
  ToolPattern,
  ToolplaneError,
  Uuid,
  adapterCommandSchemas,
  hasErrorCode,
  type AgentProfile,
  type KillSwitch,
  type PolicyBundle,
  type TenantPolicy,
  type TenantPolicyReply,
} from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import type { CliContext } from '../context.js';
import { operatorHeaders, operatorToken, unverifiedClaims, withToken, type TokenOptions } from '../operator-token.js';
import { formatFields, formatTable } from '../output.js';

// `toolplane policies …`: the tool adapter's agent profiles (per workspace), tenant policy with kill switches, and
// policy bundles (per tenant, applied to every call through a server whose governancePolicyRef names one).
// Reads need an operator token of the scope; writes need the policy-admin role. Every write can be guarded by
// --expected-version (0: create only; n: replace only version n), so two operators never overwrite each other unseen.

interface InputOptions extends TokenOptions {
  readonly file?: string;
  readonly jsonInput?: string;
  readonly expectedVersion?: number;
}

/** `--expected-version N`: a whole number ≥ 0. */
export function parseExpectedVersion(value: string): number {
  const version = Number(value);
  if (!/^\d+$/.test(value.trim()) || !Number.isSafeInteger(version)) throw new ToolplaneError('INVALID_ARGUMENT', '--expected-version must be a whole number (0: create only)');
  return version;
}

/** `--limit 1..200`. */
export function parsePageLimit(value: string): number {
  const limit = Number(value);
  if (!Number.isInteger(limit) || limit < 1 || limit > 200) throw new ToolplaneError('INVALID_ARGUMENT', '--limit must be a whole number from 1 to 200');
  return limit;
}

// What the adapter keeps for itself: a document shown by `get` can be edited and put back as it is.
const ownedByAdapter = ['tenant', 'workspace', 'updatedBy', 'updatedAt', 'version'] as const;

/**
 * Parses what an operator wrote (JSON text) as a put's input. A document as `get` prints it is accepted too: the
 * fields the adapter owns (scope, author, time, version) are dropped. INVALID_ARGUMENT names the first problem.
 */
export function parseDocumentInput<S extends z.ZodType>(schema: S, text: string, what: string): z.output<S> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new ToolplaneError('INVALID_ARGUMENT', `the ${what} is not valid JSON`);
  }
  if (typeof value === 'object' && value !== null && !Array.isArray(value)) {
    value = Object.fromEntries(Object.entries(value).filter(([key]) => !(ownedByAdapter as readonly string[]).includes(key)));
  }
  const parsed = schema.safeParse(value);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const where = issue === undefined || issue.path.length === 0 ? '' : ` at ${issue.path.join('.')}`;
    throw new ToolplaneError('INVALID_ARGUMENT', `the ${what} is invalid${where}: ${issue?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

/** The JSON text of a put: `--json-input`, or `--file` (`-` for standard input); exactly one. */
async function inputText(ctx: CliContext, options: InputOptions): Promise<string> {
  if ((options.file === undefined) === (options.jsonInput === undefined)) throw new ToolplaneError('INVALID_ARGUMENT', 'give the document with exactly one of --file F (- for standard input) or --json-input JSON');
  if (options.jsonInput !== undefined) return options.jsonInput;
  const file = options.file as string;
  if (file === '-') return ctx.io.readStdin();
  try {
    return await readFile(file, 'utf8');
  } catch {
    throw new ToolplaneError('INVALID_ARGUMENT', `cannot read ${file}`);
  }
}

/** What a kill switch command targets. */
export interface KillSwitchTarget {
  readonly target: 'tenant' | 'tool' | 'server';
  readonly tools?: string;
  readonly server?: string;
}

/** Checks that the flags name one kill switch: --tools with a tool target, --server with a server target, nothing else. */
export function killSwitchTarget(options: { target?: string; tools?: string; server?: string }): KillSwitchTarget {
  const target = options.target?.trim().toLowerCase();
  if (target !== 'tenant' && target !== 'tool' && target !== 'server') throw new ToolplaneError('INVALID_ARGUMENT', '--target must be tenant, tool or server');
  if (target === 'tool') {
    if (options.tools === undefined || !ToolPattern.safeParse(options.tools).success) throw new ToolplaneError('INVALID_ARGUMENT', '--target tool needs --tools PATTERN (a tool id or glob such as github.*)');
    if (options.server !== undefined) throw new ToolplaneError('INVALID_ARGUMENT', '--server goes with --target server');
    return { target, tools: options.tools };
  }
  if (target === 'server') {
    if (options.server === undefined || !Uuid.safeParse(options.server).success) throw new ToolplaneError('INVALID_ARGUMENT', '--target server needs --server ID (the MCP server id)');
    if (options.tools !== undefined) throw new ToolplaneError('INVALID_ARGUMENT', '--tools goes with --target tool');
    return { target, server: options.server };
  }
  if (options.tools !== undefined || options.server !== undefined) throw new ToolplaneError('INVALID_ARGUMENT', '--target tenant takes neither --tools nor --server');
  return { target };
}

function matches(killSwitch: KillSwitch, target: KillSwitchTarget): boolean {
  switch (killSwitch.target) {
    case 'TENANT':
      return target.target === 'tenant';
    case 'TOOL':
      return target.target === 'tool' && killSwitch.tools === target.tools;
    case 'SERVER':
      return target.target === 'server' && killSwitch.mcpServerId === target.server;
  }
}

/** The policy input a put sends: a stored policy without the fields the adapter owns. */
export function policyInputOf(policy: TenantPolicy): TenantPolicyInput {
  const { tenant: _tenant, updatedBy: _by, updatedAt: _at, version: _version, ...input } = policy;
  return input;
}

/**
 * The policy with the kill switch engaged (replacing one with the same target, so engaging twice updates the
 * reason). Who engaged it and when are recorded by the adapter; the values here only satisfy the contract.
 */
export function engageKillSwitch(policy: TenantPolicy, target: KillSwitchTarget, reason: string, by: string, at: string): TenantPolicyInput {
  const fields = { reason, engagedBy: by, engagedAt: at };
  const engaged: KillSwitch =
    target.target === 'tenant'
      ? { target: 'TENANT', ...fields }
      : target.target === 'tool'
        ? { target: 'TOOL', tools: target.tools as string, ...fields }
        : { target: 'SERVER', mcpServerId: target.server as string, ...fields };
  const input = policyInputOf(policy);
  return { ...input, killSwitches: [...input.killSwitches.filter((killSwitch) => !matches(killSwitch, target)), engaged] };
}

/** The policy with the kill switch released; NOT_FOUND when none with that target is engaged. */
export function releaseKillSwitch(policy: TenantPolicy, target: KillSwitchTarget): TenantPolicyInput {
  const input = policyInputOf(policy);
  const kept = input.killSwitches.filter((killSwitch) => !matches(killSwitch, target));
  if (kept.length === input.killSwitches.length) {
    const what = target.target === 'tenant' ? 'the tenant' : target.target === 'tool' ? `tools ${target.tools ?? ''}` : `server ${target.server ?? ''}`;
    throw new ToolplaneError('NOT_FOUND', `no kill switch is engaged for ${what}`);
  }
  return { ...input, killSwitches: kept };
}

function profileFields(profile: AgentProfile): string {
  return formatFields([
    ['agent', profile.agentId],
    ['description', profile.description],
    ['allowed tools', profile.allowedTools],
    ['denied tools', profile.deniedTools],
    ['max risk', profile.maxRiskClass],
    ['max side effect', profile.maxSideEffectClass],
    ['permissions', profile.permissions],
    ['updated by', profile.updatedBy],
    ['updated at', profile.updatedAt],
    ['version', profile.version],
  ]);
}

function policyFields(reply: TenantPolicyReply): string {
  const { policy } = reply;
  const switches = policy.killSwitches.map((killSwitch) => {
    const what = killSwitch.target === 'TENANT' ? 'tenant' : killSwitch.target === 'TOOL' ? `tools ${killSwitch.tools}` : `server ${killSwitch.mcpServerId}`;
    return `${what} (${killSwitch.reason}; ${killSwitch.engagedBy} at ${killSwitch.engagedAt})`;
  });
  return formatFields([
    ['tenant', policy.tenant],
    ['version', reply.isDefault ? `${policy.version} (default policy: none written yet)` : policy.version],
    ['denied classes', policy.deniedSideEffectClasses],
    ['approval classes', policy.approvalRequiredClasses],
    ['approval risk', policy.approvalRiskThreshold],
    ['max risk', policy.maxRiskClass],
    ['approvers', [...policy.approvers.roles.map((role) => `role:${role}`), ...policy.approvers.principals]],
    ['approval ttl ms', policy.approvalTtlMs],
    ['rate limits', policy.rateLimits.map((rule) => `${rule.tools} ${rule.limit}/${rule.windowMs}ms per ${rule.per.toLowerCase()}`)],
    ['kill switches', switches],
    ['blocked commands', `${policy.commands.block.length} patterns, ${policy.commands.onBlocked.toLowerCase()}`],
    ['direct calls', policy.allowDirectPrincipalCalls ? 'allowed' : 'not allowed'],
    ['updated by', policy.updatedBy],
    ['updated at', policy.updatedAt],
  ]);
}

/** A policy bundle as aligned `label: value` lines. */
export function bundleFields(bundle: PolicyBundle): string {
  return formatFields([
    ['bundle', bundle.name],
    ['tenant', bundle.tenant],
    ['description', bundle.description],
    ['denied classes', bundle.deniedSideEffectClasses],
    ['approval classes', bundle.approvalRequiredClasses],
    ['approval risk', bundle.approvalRiskThreshold],
    ['max risk', bundle.maxRiskClass],
    ['rate limits', bundle.rateLimits.map((rule) => `${rule.tools} ${rule.limit}/${rule.windowMs}ms per ${rule.per.toLowerCase()}`)],
    ['class raises', bundle.classRaises.map((raise) => `${raise.tools} to ${raise.raiseTo}`)],
    ['blocked commands', `${bundle.commands.block.length} patterns, ${bundle.commands.onBlocked.toLowerCase()}`],
    ['updated by', bundle.updatedBy],
    ['updated at', bundle.updatedAt],
    ['version', bundle.version],
  ]);
}

function withInput(command: Command, what: string): Command {
  return withToken(command)
    .option('--file <path>', `the ${what} as JSON (- for standard input)`)
    .option('--json-input <json>', `the ${what} as JSON text`)
    .option('--expected-version <n>', 'only replace this version (0: only create); default: overwrite', parseExpectedVersion);
}

/** Get → change → put of the tenant policy, guarded by the version read; retried once if another write got between. */
async function changeTenantPolicy(ctx: CliContext, options: TokenOptions, change: (policy: TenantPolicy, by: string, at: string) => TenantPolicyInput): Promise<TenantPolicyReply> {
  const token = await operatorToken(ctx, options);
  const auth = await operatorHeaders(ctx, options);
  const by = unverifiedClaims(token).principal ?? 'operator';
  for (let attempt = 1; ; attempt += 1) {
    const current = await ctx.call('adapter', 'getTenantPolicy', adapterCommandSchemas.getTenantPolicy, {}, auth);
    const policy = change(current.policy, by, new Date().toISOString());
    try {
      return await ctx.call('adapter', 'putTenantPolicy', adapterCommandSchemas.putTenantPolicy, { policy, expectedVersion: current.isDefault ? 0 : current.policy.version }, auth);
    } catch (error) {
      if (attempt >= 2 || !hasErrorCode(error) || error.code !== 'CONFLICT') throw error;
    }
  }
}

/** `toolplane policies agent|tenant|kill-switch …`: the governance documents of the tool adapter. */
export const policiesCommands: CommandGroup = (program, context) => {
  const policies = program.command('policies').description('Read and write agent profiles, the tenant policy and policy bundles (operator token; writes need policy-admin).');

  const agent = policies.command('agent').description("agent profiles of the workspace: the tools each agent may call, its maximum risk and class");
  withToken(agent.command('get'))
    .description("show an agent's profile")
    .argument('<agentId>', 'the agent id')
    .action(async (agentId: string, options: TokenOptions) => {
      const ctx = context();
      const reply = await ctx.call('adapter', 'getAgentProfile', adapterCommandSchemas.getAgentProfile, { agentId }, await operatorHeaders(ctx, options));
      ctx.print(reply.profile, () => profileFields(reply.profile));
    });
  withToken(agent.command('list'))
    .description('list the agent profiles of the workspace, by agent id')
    .option('--limit <n>', 'at most this many (1-200, default 50)', parsePageLimit)
    .option('--after <cursor>', 'continue after the previous page (its "next" cursor)')
    .action(async (options: TokenOptions & { limit?: number; after?: string }) => {
      const ctx = context();
      const page = await ctx.call(
        'adapter',
        'listAgentProfiles',
        adapterCommandSchemas.listAgentProfiles,
        { ...(options.limit === undefined ? {} : { limit: options.limit }), ...(options.after === undefined ? {} : { after: options.after }) },
        await operatorHeaders(ctx, options),
      );
      ctx.print(page, () => {
        const table = formatTable(
          ['AGENT', 'ALLOWED', 'DENIED', 'MAX RISK', 'VERSION', 'UPDATED BY'],
          page.items.map((profile) => [profile.agentId, profile.allowedTools, profile.deniedTools, profile.maxRiskClass, profile.version, profile.updatedBy]),
        );
        return page.next === null ? table : `${table}more: --after ${page.next}\n`;
      });
    });
  withInput(agent.command('put'), 'agent profile')
    .description('create or replace an agent profile (a document as `get --json` prints it is accepted)')
    .action(async (options: InputOptions) => {
      const ctx = context();
      const profile = parseDocumentInput(AgentProfileInput, await inputText(ctx, options), 'agent profile');
      const reply = await ctx.call(
        'adapter',
        'putAgentProfile',
        adapterCommandSchemas.putAgentProfile,
        { profile, ...(options.expectedVersion === undefined ? {} : { expectedVersion: options.expectedVersion }) },
        await operatorHeaders(ctx, options),
      );
      ctx.print(reply.profile, () => profileFields(reply.profile));
    });
  withToken(agent.command('delete'))
    .description("delete an agent's profile: the agent can call no tool until it has one again")
    .argument('<agentId>', 'the agent id')
    .option('--expected-version <n>', 'only delete this version', parseExpectedVersion)
    .action(async (agentId: string, options: TokenOptions & { expectedVersion?: number }) => {
      const ctx = context();
      const reply = await ctx.call(
        'adapter',
        'deleteAgentProfile',
        adapterCommandSchemas.deleteAgentProfile,
        { agentId, ...(options.expectedVersion === undefined ? {} : { expectedVersion: options.expectedVersion }) },
        await operatorHeaders(ctx, options),
      );
      ctx.print(reply, () => formatFields([['agent', reply.agentId], ['deleted', reply.deleted ? 'yes' : 'no (there was no profile)']]));
    });

  const tenant = policies.command('tenant').description('the tenant policy: denied and gated classes, approvers, rate limits, kill switches, environments');
  withToken(tenant.command('get'))
    .description('show the tenant policy (the default one when none was written)')
    .action(async (options: TokenOptions) => {
      const ctx = context();
      const reply = await ctx.call('adapter', 'getTenantPolicy', adapterCommandSchemas.getTenantPolicy, {}, await operatorHeaders(ctx, options));
      ctx.print(reply, () => policyFields(reply));
    });
  withInput(tenant.command('put'), 'tenant policy')
    .description('create or replace the tenant policy (a document as `get --json` prints it, or its "policy", is accepted)')
    .action(async (options: InputOptions) => {
      const ctx = context();
      const text = await inputText(ctx, options);
      // `tenant get --json` prints { policy, isDefault }: take the policy out of it.
      const document = ((): string => {
        try {
          const value: unknown = JSON.parse(text);
          return typeof value === 'object' && value !== null && 'policy' in value && 'isDefault' in value ? JSON.stringify(value.policy) : text;
        } catch {
          return text;
        }
      })();
      const policy = parseDocumentInput(TenantPolicyInput, document, 'tenant policy');
      const reply = await ctx.call(
        'adapter',
        'putTenantPolicy',
        adapterCommandSchemas.putTenantPolicy,
        { policy, ...(options.expectedVersion === undefined ? {} : { expectedVersion: options.expectedVersion }) },
        await operatorHeaders(ctx, options),
      );
      ctx.print(reply, () => policyFields(reply));
    });

  const bundle = policies
    .command('bundle')
    .description("policy bundles of the tenant: rules in the tenant policy's language added to every call through a server naming one (governancePolicyRef)");
  withToken(bundle.command('get'))
    .description('show a policy bundle')
    .argument('<name>', 'the bundle name')
    .action(async (name: string, options: TokenOptions) => {
      const ctx = context();
      const reply = await ctx.call('adapter', 'getPolicyBundle', adapterCommandSchemas.getPolicyBundle, { name }, await operatorHeaders(ctx, options));
      ctx.print(reply.bundle, () => bundleFields(reply.bundle));
    });
  withToken(bundle.command('list'))
    .description('list the policy bundles of the tenant, by name')
    .option('--limit <n>', 'at most this many (1-200, default 50)', parsePageLimit)
    .option('--after <cursor>', 'continue after the previous page (its "next" cursor)')
    .action(async (options: TokenOptions & { limit?: number; after?: string }) => {
      const ctx = context();
      const page = await ctx.call(
        'adapter',
        'listPolicyBundles',
        adapterCommandSchemas.listPolicyBundles,
        { ...(options.limit === undefined ? {} : { limit: options.limit }), ...(options.after === undefined ? {} : { after: options.after }) },
        await operatorHeaders(ctx, options),
      );
      ctx.print(page, () => {
        const table = formatTable(
          ['BUNDLE', 'DENIED', 'APPROVAL', 'MAX RISK', 'VERSION', 'UPDATED BY'],
          page.items.map((item) => [item.name, item.deniedSideEffectClasses, item.approvalRequiredClasses, item.maxRiskClass, item.version, item.updatedBy]),
        );
        return page.next === null ? table : `${table}more: --after ${page.next}\n`;
      });
    });
  withInput(bundle.command('put'), 'policy bundle')
    .description('create or replace a policy bundle (a document as `get --json` prints it is accepted); the next call through its servers is governed by it')
    .action(async (options: InputOptions) => {
      const ctx = context();
      const input = parseDocumentInput(PolicyBundleInput, await inputText(ctx, options), 'policy bundle');
      const reply = await ctx.call(
        'adapter',
        'putPolicyBundle',
        adapterCommandSchemas.putPolicyBundle,
        { bundle: input, ...(options.expectedVersion === undefined ? {} : { expectedVersion: options.expectedVersion }) },
        await operatorHeaders(ctx, options),
      );
      ctx.print(reply.bundle, () => bundleFields(reply.bundle));
    });
  withToken(bundle.command('delete'))
    .description('delete a policy bundle: calls through a server still naming it are refused until it exists again')
    .argument('<name>', 'the bundle name')
    .option('--expected-version <n>', 'only delete this version', parseExpectedVersion)
    .action(async (name: string, options: TokenOptions & { expectedVersion?: number }) => {
      const ctx = context();
      const reply = await ctx.call(
        'adapter',
        'deletePolicyBundle',
        adapterCommandSchemas.deletePolicyBundle,
        { name, ...(options.expectedVersion === undefined ? {} : { expectedVersion: options.expectedVersion }) },
        await operatorHeaders(ctx, options),
      );
      ctx.print(reply, () => formatFields([['bundle', reply.name], ['deleted', reply.deleted ? 'yes' : 'no (there was no bundle)']]));
    });

  const killSwitch = policies.command('kill-switch').description('engage or release a kill switch: every call of the tenant, of matching tools or of one server is denied');
  const targetOptions = (command: Command) =>
    withToken(command)
      .requiredOption('--target <target>', 'tenant, tool or server')
      .option('--tools <pattern>', 'with --target tool: a tool id or glob (github.*)')
      .option('--server <id>', 'with --target server: the MCP server id');
  targetOptions(killSwitch.command('engage'))
    .description('engage a kill switch (takes effect on the next call)')
    .requiredOption('--reason <text>', 'why (shown in every denied call)')
    .action(async (options: TokenOptions & { target: string; tools?: string; server?: string; reason: string }) => {
      const ctx = context();
      const target = killSwitchTarget(options);
      const reply = await changeTenantPolicy(ctx, options, (policy, by, at) => engageKillSwitch(policy, target, options.reason, by, at));
      ctx.print(reply, () => policyFields(reply));
    });
  targetOptions(killSwitch.command('release'))
    .description('release an engaged kill switch')
    .action(async (options: TokenOptions & { target: string; tools?: string; server?: string }) => {
      const ctx = context();
      const target = killSwitchTarget(options);
      const reply = await changeTenantPolicy(ctx, options, (policy) => releaseKillSwitch(policy, target));
      ctx.print(reply, () => policyFields(reply));
    });
};
