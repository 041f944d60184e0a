import { createToolplaneClient, type ToolplaneClient } from '@toolplane/client';
import { DataClassification, KnowledgeScope, ToolplaneError, registryCommandSchemas, registryOperations, type DiscoveredReadView, type EffectiveToolSet, type JsonObject, type PromptTarget } from '@toolplane/contracts';
import type { Command } from 'commander';
import type { CliContext } from '../context.js';
import type { CommandGroup } from '../command-group.js';
import { operatorHeaders, withToken, type TokenOptions } from '../operator-token.js';
import { formatTable } from '../output.js';
import { agentToken, parseArguments, parseTimeoutMs, printOutcome, withAgentToken, type AgentTokenOptions } from './invoke.js';
import { collect } from './servers.js';
import { bindSummary, descriptorFields, parseRisk } from './tools.js';

// `toolplane resources …` and `toolplane prompts …`: bind a server's discovered resources and prompts (as an
// operator; binding is the approval, as for tools), and read or fetch them as an agent through the governed pipeline.

function enumValue<T extends string>(flag: string, options: readonly T[]) {
  return (value: string): T => {
    const found = options.find((option) => option === value.trim().toUpperCase());
    if (found === undefined) throw new ToolplaneError('INVALID_ARGUMENT', `${flag} must be one of ${options.map((option) => option.toLowerCase()).join(', ')}`);
    return found;
  };
}

const parseClassification = enumValue('--classification', DataClassification.options);
const parseScope = enumValue('--scope', KnowledgeScope.options);

interface ReadBindOptions extends TokenOptions {
  readonly risk?: ReturnType<typeof parseRisk>;
  readonly permission: readonly string[];
  readonly role: readonly string[];
  readonly secret: readonly string[];
  readonly timeoutMs?: number;
  readonly expectHash?: string;
}

interface ResourceBindOptions extends ReadBindOptions {
  readonly template?: string;
  readonly knowledgeSource: string;
  readonly classification: DataClassification;
  readonly scope?: KnowledgeScope;
  readonly resourceId?: string;
}

/** What `resources bind` binds: the resource at a URI, or (`--template`) a resource template; exactly one. */
export function resourceOrTemplate(uri: string | undefined, template: string | undefined): { uri: string } | { uriTemplate: string } {
  if (uri !== undefined && template !== undefined) throw new ToolplaneError('INVALID_ARGUMENT', 'give a resource URI or --template <uriTemplate>, not both');
  if (template !== undefined) return { uriTemplate: template };
  if (uri === undefined) throw new ToolplaneError('INVALID_ARGUMENT', 'give the resource URI, or --template <uriTemplate> to bind a resource template');
  return { uri };
}

/** The flags every read binding shares. */
function withReadBindingFlags(command: Command): Command {
  return command
    .option('--risk <class>', 'risk class: low (default), medium, high, critical', parseRisk)
    .option('--permission <name>', 'a permission the caller must hold (repeatable)', collect, [])
    .option('--role <name>', 'a role the caller must hold (repeatable)', collect, [])
    .option('--secret <connection>', 'a connection whose credential is leased at read time (repeatable)', collect, [])
    .option('--timeout-ms <n>', 'the deadline of one read (default 30000)', parseTimeoutMs)
    .option('--expect-hash <sha256>', 'the definition hash you reviewed; refused if the server now reports another');
}

function readBindingFields(options: ReadBindOptions) {
  return {
    ...(options.risk === undefined ? {} : { riskClass: options.risk }),
    permissions: [...options.permission],
    roles: [...options.role],
    secretDependencies: [...options.secret],
    ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
    ...(options.expectHash === undefined ? {} : { expectedDefinitionHash: options.expectHash }),
  };
}

/** Runs `work` with an SDK client acting as the agent of the token. */
async function asAgent<T>(ctx: CliContext, flags: AgentTokenOptions, work: (client: ToolplaneClient) => Promise<T>): Promise<T> {
  const contextToken = await agentToken(ctx, flags);
  const client = await createToolplaneClient({ messaging: await ctx.messaging(), scope: ctx.scope(), contextToken });
  try {
    return await work(client);
  } finally {
    await client.close();
  }
}

/** The effective resources and resource templates as a table (a template's URI column is its `uriTemplate`). */
export function effectiveResourcesText(set: EffectiveToolSet): string {
  const rows = [...(set.resources ?? []), ...(set.resourceTemplates ?? [])];
  return formatTable(
    ['RESOURCE ID', 'VERSION', 'CLASSIFICATION', 'KNOWLEDGE SOURCE', 'URI'],
    rows.map((resource) => [
      resource.resourceId,
      resource.toolVersion,
      resource.classification,
      `${resource.knowledgeSource} (${resource.scope.toLowerCase()})`,
      'uriTemplate' in resource ? resource.uriTemplate : resource.uri,
    ]),
  );
}

/** The effective prompts as a table. */
export function effectivePromptsText(set: EffectiveToolSet): string {
  return formatTable(
    ['PROMPT ID', 'VERSION', 'TARGET', 'ARGUMENTS', 'DESCRIPTION'],
    (set.prompts ?? []).map((prompt) => [
      prompt.promptId,
      prompt.toolVersion,
      `${prompt.target.kind} ${prompt.target.ref}`,
      prompt.arguments.map((argument) => `${argument.name}${argument.required ? '' : '?'}`),
      prompt.description,
    ]),
  );
}

/** Discovered resources or prompts with their binding state, as a table. */
export function discoveredReadsText(views: readonly DiscoveredReadView[]): string {
  const resource = views[0]?.capability !== 'prompt';
  return formatTable(
    ['SERVER', resource ? 'URI' : 'PROMPT', 'BINDING', 'READABLE', resource ? 'RESOURCE ID' : 'PROMPT ID', 'VERSION', resource ? 'CLASSIFICATION' : 'TARGET', 'DEFINITION'],
    views.map((view) => [
      view.serverName,
      view.name,
      view.binding,
      view.invocable ? 'yes' : 'no',
      view.toolId,
      view.toolVersion,
      view.classification ?? (view.target === undefined ? undefined : `${view.target.kind} ${view.target.ref}`),
      view.definitionHash?.slice(0, 12),
    ]),
  );
}

/** `toolplane resources list|bind|unbind|effective|read` and `toolplane prompts list|bind|unbind|effective|get`. */
export const readsCommands: CommandGroup = (program, context) => {
  const resources = program.command('resources').description('Bind discovered resources to knowledge sources (operator), and read them as an agent through the governed pipeline.');

  withToken(resources.command('list'))
    .description('list discovered resources and resource templates with their binding state (an unbound one is listed but never readable)')
    .option('--server <id>', 'only the resources of this server')
    .action(async (options: TokenOptions & { server?: string }) => {
      const ctx = context();
      const reply = await ctx.call('registry', registryOperations.listTools, registryCommandSchemas.listTools, options.server === undefined ? {} : { serverId: options.server }, await operatorHeaders(ctx, options));
      const views = [...reply.resources, ...(reply.resourceTemplates ?? [])];
      ctx.print(views, () => discoveredReadsText(views));
    });

  withReadBindingFlags(withToken(resources.command('bind')))
    .description(
      'bind a discovered resource (by its URI) or resource template (--template): map it to a knowledge source with a scope and a data ' +
        'classification, and pin its definition',
    )
    .argument('<serverId>', 'server id')
    .argument('[uri]', "the resource's URI on the server")
    .option('--template <uriTemplate>', "instead of a URI: a resource template's uriTemplate as the server lists it (its variables become the read's arguments)")
    .requiredOption('--knowledge-source <id>', 'the knowledge source the resource belongs to')
    .requiredOption('--classification <class>', 'public, internal, confidential or restricted: agents read it only up to their clearance', parseClassification)
    .option('--scope <scope>', 'workspace (default) or tenant', parseScope)
    .option('--resource-id <id>', 'the governed id (default {server}.{resource name})')
    .action(async (serverId: string, uri: string | undefined, options: ResourceBindOptions) => {
      const ctx = context();
      const request = {
        serverId,
        ...resourceOrTemplate(uri, options.template),
        knowledgeSource: options.knowledgeSource,
        classification: options.classification,
        ...(options.scope === undefined ? {} : { scope: options.scope }),
        ...(options.resourceId === undefined ? {} : { resourceId: options.resourceId }),
        ...readBindingFields(options),
      };
      const reply = await ctx.call('registry', registryOperations.bindResource, registryCommandSchemas.bindResource, request, await operatorHeaders(ctx, options));
      ctx.print(reply, () => bindSummary(reply));
    });

  withToken(resources.command('unbind'))
    .description('unbind a resource or resource template: its descriptor is retired and reads of it are refused')
    .argument('<serverId>', 'server id')
    .argument('<uri>', "the resource's URI on the server (a template's uriTemplate)")
    .action(async (serverId: string, uri: string, options: TokenOptions) => {
      const ctx = context();
      const reply = await ctx.call('registry', registryOperations.unbind, registryCommandSchemas.unbind, { serverId, toolName: uri, capability: 'resource' }, await operatorHeaders(ctx, options));
      ctx.print(reply.descriptor, () => descriptorFields(reply.descriptor));
    });

  withAgentToken(resources.command('effective'))
    .description('list the resources and resource templates the agent may read')
    .action(async (flags: AgentTokenOptions) => {
      const ctx = context();
      const set = await asAgent(ctx, flags, (client) => client.effectiveTools());
      ctx.print([...(set.resources ?? []), ...(set.resourceTemplates ?? [])], () => effectiveResourcesText(set));
    });

  withAgentToken(resources.command('read'))
    .description('read a bound resource as an agent through the governed pipeline; prints the receipt and the contents (exit 1 unless SUCCESS, except with --json)')
    .argument('<resourceId>', 'governed resource id')
    .option('--args <json>', "a bound template's variables as a JSON object of strings, or - to read them from standard input", '{}')
    .option('--key <key>', 'idempotency key (default: generated)')
    .option('--timeout-ms <n>', 'how long to wait (default 60000)', parseTimeoutMs)
    .action(async (resourceId: string, flags: AgentTokenOptions & { args: string; key?: string; timeoutMs?: number }) => {
      const ctx = context();
      const variables = stringArguments(await parseArguments(flags.args, ctx.io.readStdin), 'template variable');
      const result = await asAgent(ctx, flags, (client) =>
        client.readResource(resourceId, {
          variables,
          ...(flags.key === undefined ? {} : { idempotencyKey: flags.key }),
          ...(flags.timeoutMs === undefined ? {} : { timeoutMs: flags.timeoutMs }),
        }),
      );
      printOutcome(ctx, result);
    });

  const prompts = program.command('prompts').description('Bind discovered prompts to skills or workflow steps (operator; never to policy), and fetch them as an agent through the governed pipeline.');

  withToken(prompts.command('list'))
    .description('list discovered prompts with their binding state (an unbound one is listed but never readable)')
    .option('--server <id>', 'only the prompts of this server')
    .action(async (options: TokenOptions & { server?: string }) => {
      const ctx = context();
      const reply = await ctx.call('registry', registryOperations.listTools, registryCommandSchemas.listTools, options.server === undefined ? {} : { serverId: options.server }, await operatorHeaders(ctx, options));
      ctx.print(reply.prompts, () => discoveredReadsText(reply.prompts));
    });

  withReadBindingFlags(withToken(prompts.command('bind')))
    .description('bind a discovered prompt to a skill or a workflow step (never to policy), and pin its definition')
    .argument('<serverId>', 'server id')
    .argument('<promptName>', "the prompt's name on the server")
    .requiredOption('--target <kind:ref>', 'what the prompt maps to: skill:<skillId> or workflow-step:<flow>/<step>')
    .option('--prompt-id <id>', 'the governed id (default {server}.{prompt name})')
    .action(async (serverId: string, promptName: string, options: ReadBindOptions & { target: string; promptId?: string }) => {
      const ctx = context();
      const request = {
        serverId,
        promptName,
        target: parseTarget(options.target),
        ...(options.promptId === undefined ? {} : { promptId: options.promptId }),
        ...readBindingFields(options),
      };
      const reply = await ctx.call('registry', registryOperations.bindPrompt, registryCommandSchemas.bindPrompt, request, await operatorHeaders(ctx, options));
      ctx.print(reply, () => bindSummary(reply));
    });

  withToken(prompts.command('unbind'))
    .description('unbind a prompt: its descriptor is retired and fetches of it are refused')
    .argument('<serverId>', 'server id')
    .argument('<promptName>', "the prompt's name on the server")
    .action(async (serverId: string, promptName: string, options: TokenOptions) => {
      const ctx = context();
      const reply = await ctx.call('registry', registryOperations.unbind, registryCommandSchemas.unbind, { serverId, toolName: promptName, capability: 'prompt' }, await operatorHeaders(ctx, options));
      ctx.print(reply.descriptor, () => descriptorFields(reply.descriptor));
    });

  withAgentToken(prompts.command('effective'))
    .description('list the prompts the agent may fetch')
    .action(async (flags: AgentTokenOptions) => {
      const ctx = context();
      const set = await asAgent(ctx, flags, (client) => client.effectiveTools());
      ctx.print(set.prompts ?? [], () => effectivePromptsText(set));
    });

  withAgentToken(prompts.command('get'))
    .description('fetch a bound prompt as an agent through the governed pipeline; prints the receipt and the messages (exit 1 unless SUCCESS, except with --json)')
    .argument('<promptId>', 'governed prompt id')
    .option('--args <json>', 'the prompt arguments as a JSON object of strings, or - to read them from standard input', '{}')
    .option('--key <key>', 'idempotency key (default: generated)')
    .action(async (promptId: string, flags: AgentTokenOptions & { args: string; key?: string }) => {
      const ctx = context();
      const args = stringArguments(await parseArguments(flags.args, ctx.io.readStdin));
      const result = await asAgent(ctx, flags, (client) => client.getPrompt(promptId, args, flags.key === undefined ? {} : { idempotencyKey: flags.key }));
      printOutcome(ctx, result);
    });
};

/** `skill:<id>` or `workflow-step:<flow>/<step>`; any other kind (policy among them) is refused, as the registry refuses it. */
export function parseTarget(value: string): PromptTarget {
  const colon = value.indexOf(':');
  if (colon <= 0) throw new ToolplaneError('INVALID_ARGUMENT', '--target must be skill:<skillId> or workflow-step:<flow>/<step>');
  const kinds: Record<string, PromptTarget['kind']> = { skill: 'Skill', 'workflow-step': 'WorkflowStep' };
  const kind = kinds[value.slice(0, colon).trim().toLowerCase()];
  if (kind === undefined) throw new ToolplaneError('INVALID_ARGUMENT', `--target ${value.slice(0, colon)}: a prompt maps to a skill or a workflow step, never to policy (ADR-0022 §5)`);
  return { kind, ref: value.slice(colon + 1) };
}

function stringArguments(args: JsonObject, what = 'prompt argument'): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(args)) {
    if (typeof value !== 'string') throw new ToolplaneError('INVALID_ARGUMENT', `${what} ${name} must be a string`);
    out[name] = value;
  }
  return out;
}
