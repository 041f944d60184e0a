import {
  DEFAULT_CLEARANCE,
  PipelineStage,
  compareDataClassifications,
  compareRiskClasses,
  compareSideEffectClasses,
  deterministicUuid,
  raiseSideEffectClass,
  type AgentProfile,
  type IsoDateTime,
  type JsonObject,
  type PolicyBundle,
  type PolicyDecision,
  type PolicyReason,
  type PolicyReasonCode,
  type SideEffectClass,
  type TenantPolicy,
  type ToolDescriptor,
  type ToolFailure,
} from '@toolplane/contracts';
import { DEFAULT_BLOCKED_COMMAND_PATTERNS, checkCommand } from './command-policy.js';
import { LinearRegExpCache } from './linear-regexp.js';
import { applicableRateLimits, slidingWindowDecision, type RateLimitCheck, type RateLog } from './rate-limit.js';
import { firstMatchingToolPattern, toolPatternMatches } from './tool-patterns.js';

// The policy evaluator: agent permission, tenant policy and side-effect classification of one call, as one pure,
// deterministic function of its inputs. Every finding becomes a reason; the effect is deny if any reason denies,
// approval_required if any asks for approval, allow otherwise. The effective class is the declared class raised
// (never lowered) by the workspace environment, policy raises and command escalation. The policy bundle of the
// tool's server adds its rules to the tenant policy's: since findings only accumulate, the strictest outcome of the
// two wins, and each finding the bundle causes carries its name.

/** Who is calling: the principal from the verified context token and, when an agent acts, the agent. */
export interface CallerIdentity {
  readonly principal: string;
  readonly agentId?: string | undefined;
  readonly agentRevision?: string | undefined;
  /** Roles of the principal, from the verified token. */
  readonly roles: readonly string[];
}

/** The call a policy decision is about. */
export interface PolicySubject {
  readonly invocationId: string;
  readonly tenant: string;
  readonly workspace: string;
  readonly toolId: string;
  readonly toolVersion: string;
  readonly requestHash: string;
  readonly arguments: JsonObject;
}

/**
 * The policy bundle of the tool's server as the I/O layer found it: none to apply (a tool without a server, or
 * `default` with none stored), the stored bundle, a name with nothing (readable) stored under it, or a server that
 * could not be asked which bundle it names. The last two fail closed.
 */
export type ServerPolicyBundle =
  | { readonly kind: 'none' }
  | { readonly kind: 'bundle'; readonly bundle: PolicyBundle }
  | { readonly kind: 'missing'; readonly name: string; readonly problem?: string | undefined }
  | { readonly kind: 'unavailable'; readonly problem: string };

/** Everything a decision depends on; the I/O layer loads it, the evaluator only reads it. */
export interface PolicyInput {
  readonly subject: PolicySubject;
  readonly descriptor: ToolDescriptor;
  readonly caller: CallerIdentity;
  /** The profile of `caller.agentId`; undefined when there is none (or no agent acts). */
  readonly agentProfile: AgentProfile | undefined;
  readonly tenantPolicy: TenantPolicy;
  /** The policy bundle of the tool's server; absent for a caller that governs no server (the same as `none`). */
  readonly serverBundle?: ServerPolicyBundle | undefined;
  /** The current log of every counter {@link rateLimitChecksFor} names (absent ones count as empty). */
  readonly rateCounters: ReadonlyMap<string, RateLog>;
  readonly now: IsoDateTime;
  /** Compiled command patterns, kept between calls. */
  readonly regExpCache?: LinearRegExpCache;
}

/**
 * A counter to persist because the call was counted: `log` is the counter with the call in it. A writer that finds
 * the counter changed since it was read decides again with the same limit and time ({@link slidingWindowDecision}).
 */
export interface RateCounterUpdate {
  readonly key: string;
  readonly log: RateLog;
  readonly limit: number;
  readonly windowMs: number;
  /** The time the call was counted at (epoch ms). */
  readonly atMs: number;
}

/** The decision, and the counters the I/O layer must persist (only when the call was not denied). */
export interface PolicyEvaluation {
  readonly decision: PolicyDecision;
  readonly rateCounterUpdates: readonly RateCounterUpdate[];
}

type Finding = PolicyReason;

const stageOrder = PipelineStage.options;

function finding(code: PolicyReasonCode, stage: PolicyReason['stage'], effect: PolicyReason['effect'], message: string, policyBundle?: string): Finding {
  return { code, stage, effect, message: message.length <= 512 ? message : `${message.slice(0, 511)}…`, ...(policyBundle === undefined ? {} : { policyBundle }) };
}

/** How a bundle's reasons name it. */
function bundleLabel(name: string): string {
  return `policy bundle ${JSON.stringify(name)}`;
}

/** A tenant policy for a tenant that has none: nothing denied, everything beyond WRITE gated, common destruction blocked. */
export function defaultTenantPolicy(tenant: string, now: IsoDateTime): TenantPolicy {
  return {
    tenant,
    deniedSideEffectClasses: [],
    approvalRequiredClasses: ['DESTRUCTIVE', 'EXTERNAL_COMMUNICATION', 'CODE_EXECUTION', 'PRIVILEGED'],
    approvers: { roles: ['approver'], principals: [] },
    approvalTtlMs: 3_600_000,
    rateLimits: [],
    killSwitches: [],
    environments: [],
    classRaises: [],
    commands: { block: [...DEFAULT_BLOCKED_COMMAND_PATTERNS], onBlocked: 'DENY', escalateTo: 'PRIVILEGED' },
    allowDirectPrincipalCalls: false,
    sensitiveArgumentFields: [],
    updatedBy: 'svc:tool-adapter',
    updatedAt: now,
    version: 1,
  };
}

/** What the static rules (those that depend on neither arguments nor counters) say about a tool for a caller. */
export interface StaticAssessment {
  readonly declaredClass: SideEffectClass;
  /** The declared class raised by environment and policy (command escalation depends on arguments: not here). */
  readonly effectiveClass: SideEffectClass;
  readonly findings: readonly Finding[];
}

/** The environment, policy and bundle raises of a tool's class in a workspace. */
function classRaises(descriptor: ToolDescriptor, workspace: string, policy: TenantPolicy, bundle: PolicyBundle | undefined): { effectiveClass: SideEffectClass; findings: Finding[] } {
  const declared = descriptor.sideEffectClass;
  const findings: Finding[] = [];
  let effectiveClass = declared;
  const environment = policy.environments.find((entry) => entry.workspace === workspace);
  if (environment?.raiseTo !== undefined && (declared !== 'READ' || environment.raiseReads)) {
    const raised = raiseSideEffectClass(effectiveClass, environment.raiseTo);
    if (raised !== effectiveClass) {
      findings.push(finding('CLASS_RAISED_BY_ENVIRONMENT', 'SIDE_EFFECT_CLASSIFICATION', 'raise', `the ${environment.environment} workspace ${workspace} raises ${effectiveClass} to ${raised}`));
      effectiveClass = raised;
    }
  }
  for (const raise of policy.classRaises) {
    if (!toolPatternMatches(raise.tools, descriptor.toolId)) continue;
    const raised = raiseSideEffectClass(effectiveClass, raise.raiseTo);
    if (raised !== effectiveClass) {
      findings.push(finding('CLASS_RAISED_BY_POLICY', 'SIDE_EFFECT_CLASSIFICATION', 'raise', `tenant policy raises ${descriptor.toolId} from ${effectiveClass} to ${raised}: ${raise.reason}`));
      effectiveClass = raised;
    }
  }
  for (const raise of bundle?.classRaises ?? []) {
    if (bundle === undefined || !toolPatternMatches(raise.tools, descriptor.toolId)) continue;
    const raised = raiseSideEffectClass(effectiveClass, raise.raiseTo);
    if (raised !== effectiveClass) {
      findings.push(
        finding('CLASS_RAISED_BY_POLICY', 'SIDE_EFFECT_CLASSIFICATION', 'raise', `${bundleLabel(bundle.name)} raises ${descriptor.toolId} from ${effectiveClass} to ${raised}: ${raise.reason}`, bundle.name),
      );
      effectiveClass = raised;
    }
  }
  return { effectiveClass, findings };
}

/** Agent-permission findings for a tool whose effective class is known. */
function agentFindings(descriptor: ToolDescriptor, effectiveClass: SideEffectClass, caller: CallerIdentity, profile: AgentProfile | undefined, policy: TenantPolicy, workspace: string): Finding[] {
  const stage = 'AGENT_PERMISSION';
  const findings: Finding[] = [];
  const toolId = descriptor.toolId;
  let permissions: readonly string[] = [];
  if (caller.agentId === undefined) {
    if (!policy.allowDirectPrincipalCalls) findings.push(finding('DIRECT_CALLS_NOT_ALLOWED', stage, 'deny', `${caller.principal} acts without an agent, which tenant policy does not allow`));
  } else if (profile === undefined || profile.agentId !== caller.agentId || profile.tenant !== policy.tenant || profile.workspace !== workspace) {
    findings.push(finding('NO_AGENT_PROFILE', stage, 'deny', `the agent ${caller.agentId} has no profile in this workspace`));
  } else {
    permissions = profile.permissions;
    const denied = firstMatchingToolPattern(profile.deniedTools, toolId);
    if (denied !== undefined) findings.push(finding('TOOL_DENIED_BY_PROFILE', stage, 'deny', `the agent's profile denies ${toolId} (pattern ${denied})`));
    if (firstMatchingToolPattern(profile.allowedTools, toolId) === undefined) findings.push(finding('TOOL_NOT_IN_PROFILE', stage, 'deny', `${toolId} is not among the agent's allowed tools`));
    if (compareRiskClasses(descriptor.riskClass, profile.maxRiskClass) > 0) {
      findings.push(finding('RISK_ABOVE_AGENT_MAX', stage, 'deny', `${toolId} is ${descriptor.riskClass} risk; the agent may use at most ${profile.maxRiskClass}`));
    }
    if (profile.maxSideEffectClass !== undefined && compareSideEffectClasses(effectiveClass, profile.maxSideEffectClass) > 0) {
      findings.push(finding('CLASS_ABOVE_AGENT_MAX', stage, 'deny', `the call is ${effectiveClass}; the agent may cause at most ${profile.maxSideEffectClass}`));
    }
  }
  // A bound resource is read only up to the caller's clearance (a principal without an agent has the default one).
  const classification = descriptor.resource?.classification;
  const clearance = (caller.agentId === undefined ? undefined : profile?.clearance) ?? DEFAULT_CLEARANCE;
  if (classification !== undefined && compareDataClassifications(classification, clearance) > 0) {
    findings.push(finding('CLASSIFICATION_ABOVE_CLEARANCE', stage, 'deny', `${toolId} is ${classification}; the caller is cleared for ${clearance} at most`));
  }
  const missing = descriptor.authorization.permissions.filter((permission) => !permissions.includes(permission));
  if (missing.length > 0) findings.push(finding('MISSING_PERMISSION', stage, 'deny', `${toolId} needs the permissions ${missing.join(', ')}`));
  const roles = descriptor.authorization.roles;
  if (roles.length > 0 && !roles.some((role) => caller.roles.includes(role))) {
    findings.push(finding('MISSING_ROLE', stage, 'deny', `${toolId} needs one of the roles ${roles.join(', ')}`));
  }
  return findings;
}

/** Tenant-policy findings that depend on the tool only: kill switches, risk ceiling, denied classes. */
function tenantFindings(descriptor: ToolDescriptor, effectiveClass: SideEffectClass, policy: TenantPolicy): Finding[] {
  const stage = 'TENANT_POLICY';
  const findings: Finding[] = [];
  for (const kill of policy.killSwitches) {
    if (kill.target === 'TENANT') findings.push(finding('KILL_SWITCH_TENANT', stage, 'deny', `the tenant's kill switch is engaged: ${kill.reason}`));
    else if (kill.target === 'TOOL' && toolPatternMatches(kill.tools, descriptor.toolId)) {
      findings.push(finding('KILL_SWITCH_TOOL', stage, 'deny', `a kill switch is engaged for ${kill.tools}: ${kill.reason}`));
    } else if (kill.target === 'SERVER' && kill.mcpServerId === descriptor.mcpServerId) {
      findings.push(finding('KILL_SWITCH_SERVER', stage, 'deny', `a kill switch is engaged for the tool's server: ${kill.reason}`));
    }
  }
  if (policy.maxRiskClass !== undefined && compareRiskClasses(descriptor.riskClass, policy.maxRiskClass) > 0) {
    findings.push(finding('RISK_ABOVE_TENANT_MAX', stage, 'deny', `${descriptor.toolId} is ${descriptor.riskClass} risk; the tenant allows at most ${policy.maxRiskClass}`));
  }
  if (policy.deniedSideEffectClasses.includes(effectiveClass)) findings.push(finding('CLASS_DENIED', stage, 'deny', `tenant policy denies ${effectiveClass} calls`));
  return findings;
}

/** Approval findings for a call of a given effective class. */
function approvalFindings(descriptor: ToolDescriptor, effectiveClass: SideEffectClass, policy: TenantPolicy, workspace: string): Finding[] {
  const stage = 'SIDE_EFFECT_CLASSIFICATION';
  const findings: Finding[] = [];
  // The tool's own approval intent (a ToolDefinition's `approval: Required`): added to the policy's, never removed by it.
  if (descriptor.approvalRequired === true) findings.push(finding('APPROVAL_REQUIRED_BY_TOOL', stage, 'approval_required', `every call of ${descriptor.toolId} needs an approval`));
  if (policy.approvalRequiredClasses.includes(effectiveClass)) findings.push(finding('APPROVAL_REQUIRED_FOR_CLASS', stage, 'approval_required', `${effectiveClass} calls need an approval`));
  if (policy.approvalRiskThreshold !== undefined && compareRiskClasses(descriptor.riskClass, policy.approvalRiskThreshold) >= 0) {
    findings.push(finding('APPROVAL_REQUIRED_FOR_RISK', stage, 'approval_required', `${descriptor.riskClass} risk tools need an approval`));
  }
  const environment = policy.environments.find((entry) => entry.workspace === workspace);
  if (environment?.requireApprovalForWrites === true && effectiveClass !== 'READ') {
    findings.push(finding('APPROVAL_REQUIRED_FOR_ENVIRONMENT', stage, 'approval_required', `non-READ calls in the ${environment.environment} workspace ${workspace} need an approval`));
  }
  return findings;
}

/**
 * What the server's bundle says of a tool at an effective class: its risk ceiling and denied classes (stage
 * TENANT_POLICY, like the tenant policy's), its approval rules; and, failing closed, a bundle that is missing or whose
 * name could not be learnt.
 */
function bundleFindings(descriptor: ToolDescriptor, effectiveClass: SideEffectClass, serverBundle: ServerPolicyBundle, tenant: string): Finding[] {
  const stage = 'TENANT_POLICY';
  switch (serverBundle.kind) {
    case 'none':
      return [];
    case 'missing': {
      const why = serverBundle.problem === undefined ? `does not exist in tenant ${tenant}` : `cannot be read: ${serverBundle.problem}`;
      return [finding('POLICY_BUNDLE_MISSING', stage, 'deny', `the server of ${descriptor.toolId} names ${bundleLabel(serverBundle.name)}, which ${why}`, serverBundle.name)];
    }
    case 'unavailable':
      return [finding('POLICY_BUNDLE_UNAVAILABLE', stage, 'deny', `the policy bundle of the server of ${descriptor.toolId} cannot be learnt: ${serverBundle.problem}`)];
    case 'bundle':
      break;
  }
  const { bundle } = serverBundle;
  const label = bundleLabel(bundle.name);
  const findings: Finding[] = [];
  if (bundle.maxRiskClass !== undefined && compareRiskClasses(descriptor.riskClass, bundle.maxRiskClass) > 0) {
    findings.push(finding('RISK_ABOVE_BUNDLE_MAX', stage, 'deny', `${label} allows at most ${bundle.maxRiskClass} risk; ${descriptor.toolId} is ${descriptor.riskClass}`, bundle.name));
  }
  if (bundle.deniedSideEffectClasses.includes(effectiveClass)) findings.push(finding('CLASS_DENIED', stage, 'deny', `${label} denies ${effectiveClass}`, bundle.name));
  const approvalStage = 'SIDE_EFFECT_CLASSIFICATION';
  if (bundle.approvalRequiredClasses.includes(effectiveClass)) {
    findings.push(finding('APPROVAL_REQUIRED_FOR_CLASS', approvalStage, 'approval_required', `${label}: ${effectiveClass} calls need an approval`, bundle.name));
  }
  if (bundle.approvalRiskThreshold !== undefined && compareRiskClasses(descriptor.riskClass, bundle.approvalRiskThreshold) >= 0) {
    findings.push(finding('APPROVAL_REQUIRED_FOR_RISK', approvalStage, 'approval_required', `${label}: ${descriptor.riskClass} risk tools need an approval`, bundle.name));
  }
  return findings;
}

/** The bundle a server's lookup found, when there is one to apply. */
function appliedBundle(serverBundle: ServerPolicyBundle | undefined): PolicyBundle | undefined {
  return serverBundle?.kind === 'bundle' ? serverBundle.bundle : undefined;
}

/**
 * The findings that depend only on the tool, the caller and the policies (not on arguments or counters): what the
 * effective tool set and the evaluator share, so a tool a model sees is judged by the same rules at call time.
 * `escalateTo` is a command escalation, which raises the class every rule then sees.
 */
export function assessTool(
  descriptor: ToolDescriptor,
  caller: CallerIdentity,
  profile: AgentProfile | undefined,
  policy: TenantPolicy,
  workspace: string,
  escalateTo?: SideEffectClass,
  serverBundle: ServerPolicyBundle = { kind: 'none' },
): StaticAssessment {
  const raised = classRaises(descriptor, workspace, policy, appliedBundle(serverBundle));
  let effectiveClass = raised.effectiveClass;
  const raiseFindings = [...raised.findings];
  if (escalateTo !== undefined && compareSideEffectClasses(escalateTo, effectiveClass) > 0) {
    raiseFindings.push(finding('CLASS_RAISED_BY_COMMAND', 'SIDE_EFFECT_CLASSIFICATION', 'raise', `the command raises the call from ${effectiveClass} to ${escalateTo}`));
    effectiveClass = escalateTo;
  }
  const findings = [
    ...agentFindings(descriptor, effectiveClass, caller, profile, policy, workspace),
    ...tenantFindings(descriptor, effectiveClass, policy),
    ...bundleFindings(descriptor, effectiveClass, serverBundle, policy.tenant),
    ...raiseFindings,
    ...approvalFindings(descriptor, effectiveClass, policy, workspace),
  ];
  return { declaredClass: descriptor.sideEffectClass, effectiveClass, findings };
}

/**
 * What a decision id says of a counter's log: its key, how many calls it holds, its oldest and its newest slot. A log
 * only grows at its newest slot and loses its oldest ones, so two logs a replica reads in turn differ in one of these;
 * the whole log (up to 65 slots) canonicalized for every call was most of the id's cost.
 */
function counterSummary(key: string, log: RateLog | undefined): readonly [string, number, number, number] | readonly [string, null] {
  const oldest = log?.slots[0];
  const newest = log?.slots.at(-1);
  if (log === undefined || oldest === undefined || newest === undefined) return [key, null];
  let calls = 0;
  for (const [, count] of log.slots) calls += count;
  return [key, calls, oldest[0], newest[0]];
}

/** The rate-limit counters a call is checked against: load these before {@link evaluatePolicy}. */
export function rateLimitChecksFor(input: Pick<PolicyInput, 'subject' | 'descriptor' | 'caller' | 'tenantPolicy' | 'serverBundle'>): RateLimitCheck[] {
  const bundle = appliedBundle(input.serverBundle);
  return applicableRateLimits({
    scope: { tenant: input.subject.tenant, workspace: input.subject.workspace },
    toolId: input.descriptor.toolId,
    actor: input.caller.agentId === undefined ? `principal:${input.caller.principal}` : `agent:${input.caller.agentId}`,
    descriptorLimits: input.descriptor.rateLimits,
    tenantRules: input.tenantPolicy.rateLimits,
    ...(bundle === undefined ? {} : { bundleRules: { name: bundle.name, rules: bundle.rateLimits } }),
  });
}

/** What a decision records of the server's bundle: its name and the version applied. */
function policyBundleOf(serverBundle: ServerPolicyBundle): PolicyDecision['policyBundle'] {
  if (serverBundle.kind === 'bundle') return { name: serverBundle.bundle.name, version: serverBundle.bundle.version };
  return serverBundle.kind === 'missing' ? { name: serverBundle.name } : undefined;
}

function failureOf(findings: readonly Finding[]): ToolFailure | undefined {
  const denials = findings.filter((f) => f.effect === 'deny');
  const first = denials[0];
  if (first === undefined) return undefined;
  const more = denials.length > 1 ? ` (and ${denials.length - 1} more reason${denials.length > 2 ? 's' : ''})` : '';
  // A bundle that could not be learnt is a dependency that was not there, not a refusal: asking again may pass.
  const code = first.code === 'RATE_LIMITED' ? 'RATE_LIMITED' : first.code === 'POLICY_BUNDLE_UNAVAILABLE' ? 'TEMPORARY_UNAVAILABLE' : 'AUTHORIZATION_DENIED';
  return { code, message: `${first.message}${more}`, retryable: code !== 'AUTHORIZATION_DENIED' };
}

/**
 * Evaluates agent permission, tenant policy and side-effect classification for one call. Pure and deterministic:
 * the decision id is derived from every input, so the same inputs give the same decision, id included.
 */
export function evaluatePolicy(input: PolicyInput): PolicyEvaluation {
  const { subject, descriptor, caller, agentProfile, tenantPolicy: policy, now } = input;
  const serverBundle = input.serverBundle ?? { kind: 'none' };
  const bundle = appliedBundle(serverBundle);
  const nowMs = Date.parse(now);
  const regExpCache = input.regExpCache ?? new LinearRegExpCache();
  // Command rules first, because an escalation raises the class every other rule sees.
  const command = checkCommand(descriptor.commandPolicy, policy.commands.block, subject.arguments, regExpCache);
  const commandFindings: Finding[] = [];
  let escalateTo: SideEffectClass | undefined;
  switch (command.kind) {
    case 'unreadable':
      commandFindings.push(finding('COMMAND_UNREADABLE', 'TENANT_POLICY', 'deny', `the command cannot be checked: ${command.problem}`));
      break;
    case 'invalid_pattern':
      // Fail closed: a rule that cannot be evaluated must not let commands through.
      commandFindings.push(finding('COMMAND_PATTERN_INVALID', 'TENANT_POLICY', 'deny', `a command pattern cannot be used: ${command.problem}`));
      break;
    case 'blocked':
    case 'not_allowed': {
      const what = command.kind === 'blocked' ? `the command matches a blocked pattern of the ${command.by}` : 'the command is not on the tool’s allow list';
      if (policy.commands.onBlocked === 'DENY') {
        commandFindings.push(finding(command.kind === 'blocked' ? 'COMMAND_BLOCKED' : 'COMMAND_NOT_ALLOWED', 'TENANT_POLICY', 'deny', what));
      } else {
        escalateTo = policy.commands.escalateTo;
        commandFindings.push(finding('APPROVAL_REQUIRED_FOR_COMMAND', 'SIDE_EFFECT_CLASSIFICATION', 'approval_required', `${what}; it is escalated for approval`));
      }
      break;
    }
    case 'allowed':
    case 'not_applicable':
      break;
  }
  // The bundle's block list, on its own (the descriptor's patterns and allow list were checked above), with its own
  // action: a DENY of either denies, and of two escalations the higher class wins.
  if (bundle !== undefined && descriptor.commandPolicy !== undefined && bundle.commands.block.length > 0 && command.kind !== 'unreadable') {
    const label = bundleLabel(bundle.name);
    const byBundle = checkCommand({ argument: descriptor.commandPolicy.argument, allow: [], block: [] }, bundle.commands.block, subject.arguments, regExpCache);
    if (byBundle.kind === 'invalid_pattern') {
      commandFindings.push(finding('COMMAND_PATTERN_INVALID', 'TENANT_POLICY', 'deny', `a command pattern of ${label} cannot be used: ${byBundle.problem}`, bundle.name));
    } else if (byBundle.kind === 'blocked') {
      const what = `the command matches a blocked pattern of ${label}`;
      if (bundle.commands.onBlocked === 'DENY') commandFindings.push(finding('COMMAND_BLOCKED', 'TENANT_POLICY', 'deny', what, bundle.name));
      else {
        escalateTo = raiseSideEffectClass(bundle.commands.escalateTo, escalateTo);
        commandFindings.push(finding('APPROVAL_REQUIRED_FOR_COMMAND', 'SIDE_EFFECT_CLASSIFICATION', 'approval_required', `${what}; it is escalated for approval`, bundle.name));
      }
    }
  }
  const assessment = assessTool(descriptor, caller, agentProfile, policy, subject.workspace, escalateTo, serverBundle);
  const effectiveClass = assessment.effectiveClass;
  const findings: Finding[] = [...assessment.findings, ...commandFindings];

  // Counters are consumed only by calls nothing else denies, so refused calls do not use up the budget.
  const checks = rateLimitChecksFor(input);
  const updates: RateCounterUpdate[] = [];
  let retryAfterMs: number | undefined;
  if (!findings.some((f) => f.effect === 'deny')) {
    for (const check of checks) {
      const verdict = slidingWindowDecision(check, input.rateCounters.get(check.key), nowMs);
      if (verdict.allowed) updates.push({ key: check.key, log: verdict.log, limit: check.limit, windowMs: check.windowMs, atMs: nowMs });
      else {
        retryAfterMs = Math.max(retryAfterMs ?? 0, verdict.retryAfterMs);
        findings.push(finding('RATE_LIMITED', 'TENANT_POLICY', 'deny', `rate limit reached: ${check.description}`, check.policyBundle));
      }
    }
  }

  findings.sort((a, b) => stageOrder.indexOf(a.stage) - stageOrder.indexOf(b.stage));
  const denied = findings.find((f) => f.effect === 'deny');
  const effect = denied !== undefined ? 'deny' : findings.some((f) => f.effect === 'approval_required') ? 'approval_required' : 'allow';
  const reasons = findings.slice(0, 64);
  const decisionInputs = {
    subject: { ...subject, arguments: undefined },
    descriptor: { toolId: descriptor.toolId, toolVersion: descriptor.toolVersion, version: descriptor.version, definitionHash: descriptor.definitionHash },
    caller,
    agentProfileVersion: agentProfile?.version,
    tenantPolicyVersion: policy.version,
    policyBundle: policyBundleOf(serverBundle),
    counters: checks.map((check) => counterSummary(check.key, input.rateCounters.get(check.key))),
    now,
    effect,
    effectiveClass,
    reasons: reasons.map((r) => r.code),
  };
  const decision: PolicyDecision = {
    decisionId: deterministicUuid('toolplane/v1/policy-decision', decisionInputs),
    invocationId: subject.invocationId,
    toolId: subject.toolId,
    toolVersion: subject.toolVersion,
    requestHash: subject.requestHash,
    effect,
    declaredClass: descriptor.sideEffectClass,
    effectiveClass,
    riskClass: descriptor.riskClass,
    ...(denied === undefined ? {} : { deniedAt: denied.stage, failure: failureOf(findings) }),
    ...(retryAfterMs === undefined ? {} : { retryAfterMs }),
    ...(effect === 'approval_required' ? { approval: { approvers: policy.approvers, ttlMs: policy.approvalTtlMs } } : {}),
    reasons,
    ...(agentProfile === undefined ? {} : { agentProfileVersion: agentProfile.version }),
    tenantPolicyVersion: policy.version,
    ...(policyBundleOf(serverBundle) === undefined ? {} : { policyBundle: policyBundleOf(serverBundle) }),
    evaluatedAt: now,
  };
  return { decision, rateCounterUpdates: effect === 'deny' ? [] : updates };
}
