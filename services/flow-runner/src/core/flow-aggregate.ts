import {
  ToolplaneError,
  canonicalHash,
  canonicalJson,
  type FlowDefinitionBody,
  type FlowRecord,
  type FlowVersion,
  type FlowVersionStatus,
  type FlowVersionSummary,
  type Scope,
  type ToolDefinitionFlowRef,
  type ToolDefinitionSpec,
} from '@toolplane/contracts';
import type { Decider } from '@toolplane/event-store';

// The Flow aggregate (one per workspace and flow id): versions 1, 2, 3 … in the order they were drafted. At most one
// version is a Draft at a time (the newest); a Published version never changes again; at most one Published version
// is Active. Activating is where the Flow meets the definitions that follow its active version: the caller passes the
// workspace's definitions of this flow in the command, and activation is refused while an enabled follower's public
// schemas would differ from the new version's (a follower is then never silently broken by an activation).

/** One version as the Flow's records fold it. */
export interface FlowVersionState {
  readonly version: number;
  readonly status: FlowVersionStatus;
  readonly body: FlowDefinitionBody;
  readonly bodyHash: string;
  readonly createdBy: string;
  readonly createdAt: string;
  readonly updatedBy: string;
  readonly updatedAt: string;
  readonly publishedBy?: string;
  readonly publishedAt?: string;
  readonly activatedBy?: string;
  readonly activatedAt?: string;
}

/** A Flow as its records fold: no flow id and no versions until its first draft. */
export interface FlowAggregate {
  readonly flowId?: string;
  /** Oldest first; version n is at index n - 1. */
  readonly versions: readonly FlowVersionState[];
  readonly activeVersion?: number;
}

/** Who asks and when (from the verified operator token and the caller's clock). */
interface Recorded {
  readonly actor: string;
  readonly at: string;
}

/** What may be asked of a Flow. */
export type FlowCommand =
  /** Saves the draft: `version` names it; without it, the current draft, or a new one after the newest version. */
  | ({ readonly type: 'SaveFlowDraft'; readonly flowId: string; readonly body: FlowDefinitionBody; readonly version?: number } & Recorded)
  /** Publishes a draft whose body (of hash `bodyHash`) the caller validated. */
  | ({ readonly type: 'PublishFlowVersion'; readonly flowId: string; readonly version: number; readonly bodyHash: string } & Recorded)
  /** Activates a Published version; `definitions` are the workspace's definitions that reference this flow. */
  | ({ readonly type: 'ActivateFlowVersion'; readonly flowId: string; readonly version: number; readonly definitions: readonly ToolDefinitionSpec[] } & Recorded);

const initialFlow: FlowAggregate = { versions: [] };

/** The hash a Flow records of a body: SHA-256 of its canonical JSON. */
export function flowBodyHash(body: FlowDefinitionBody): string {
  return canonicalHash(body);
}

/** One version of the Flow, if it exists. */
export function flowVersionOf(flow: FlowAggregate, version: number): FlowVersionState | undefined {
  const found = flow.versions[version - 1];
  return found?.version === version ? found : undefined;
}

/** The Flow's current draft (always its newest version), if it has one. */
export function currentDraft(flow: FlowAggregate): FlowVersionState | undefined {
  const newest = flow.versions.at(-1);
  return newest?.status === 'Draft' ? newest : undefined;
}

/** The Flow's Active version, if it has one. */
export function activeVersionOf(flow: FlowAggregate): FlowVersionState | undefined {
  return flow.activeVersion === undefined ? undefined : flowVersionOf(flow, flow.activeVersion);
}

function describe(flowId: string, version?: number): string {
  return version === undefined ? `flow ${flowId}` : `version ${version} of flow ${flowId}`;
}

/** NOT_FOUND for a flow (or one of its versions) that does not exist. */
export function flowNotFound(flowId: string, version?: number): ToolplaneError {
  return new ToolplaneError('NOT_FOUND', version === undefined ? `no flow ${flowId} in this workspace` : `${describe(flowId)} has no version ${version}`);
}

/**
 * The Flow version a definition's reference resolves to now: an exact version must be Published, `follow: 'active'`
 * needs an Active version. NOT_FOUND for a flow or version that does not exist, CONFLICT for one not (yet) callable.
 */
export function resolveFlowReference(flow: FlowAggregate | undefined, ref: ToolDefinitionFlowRef): FlowVersionState {
  if (flow === undefined || flow.versions.length === 0 || flow.flowId !== ref.flowId) throw flowNotFound(ref.flowId);
  if ('follow' in ref) {
    const active = activeVersionOf(flow);
    if (active === undefined) throw new ToolplaneError('CONFLICT', `${describe(ref.flowId)} has no active version to follow; publish and activate one first`);
    return active;
  }
  const pinned = flowVersionOf(flow, ref.version);
  if (pinned === undefined) throw flowNotFound(ref.flowId, ref.version);
  if (pinned.status !== 'Published') throw new ToolplaneError('CONFLICT', `${describe(ref.flowId, ref.version)} is a draft; publish it first`);
  return pinned;
}

/**
 * Which of a definition's public schemas differ from a Flow version's (canonical JSON equality): empty when both are
 * equal.
 */
export function schemaDifferences(definition: Pick<ToolDefinitionSpec, 'inputSchema' | 'outputSchema'>, body: Pick<FlowDefinitionBody, 'inputSchema' | 'outputSchema'>): ('input' | 'output')[] {
  const differences: ('input' | 'output')[] = [];
  if (canonicalJson(definition.inputSchema) !== canonicalJson(body.inputSchema)) differences.push('input');
  if (canonicalJson(definition.outputSchema) !== canonicalJson(body.outputSchema)) differences.push('output');
  return differences;
}

/** Whether a definition is an enabled follower of a flow's active version (what activation must not break). */
export function isEnabledFollower(definition: ToolDefinitionSpec, flowId: string): boolean {
  return definition.enabled && definition.flow.flowId === flowId && 'follow' in definition.flow;
}

function saveDraft(command: Extract<FlowCommand, { type: 'SaveFlowDraft' }>, flow: FlowAggregate): FlowRecord[] {
  const draft = currentDraft(flow);
  const newest = flow.versions.length;
  const target = command.version ?? draft?.version ?? newest + 1;
  const bodyHash = flowBodyHash(command.body);
  const saved: FlowRecord = { type: 'FlowDraftSaved', flowId: command.flowId, version: target, body: command.body, bodyHash, actor: command.actor, at: command.at };
  const existing = flowVersionOf(flow, target);
  if (existing !== undefined) {
    if (existing.status === 'Published') throw new ToolplaneError('CONFLICT', `${describe(command.flowId, target)} is published and cannot change; save a new draft instead`);
    return existing.bodyHash === bodyHash ? [] : [saved];
  }
  if (target !== newest + 1) throw flowNotFound(command.flowId, target);
  if (draft !== undefined) throw new ToolplaneError('CONFLICT', `${describe(command.flowId, draft.version)} is a draft already; save to it (a flow has one draft at a time)`);
  return [saved];
}

function publish(command: Extract<FlowCommand, { type: 'PublishFlowVersion' }>, flow: FlowAggregate): FlowRecord[] {
  const target = flowVersionOf(flow, command.version);
  if (target === undefined) throw flowNotFound(command.flowId, command.version);
  if (target.status === 'Published') return [];
  if (target.bodyHash !== command.bodyHash) {
    throw new ToolplaneError('CONFLICT', `the draft ${describe(command.flowId, command.version)} changed while it was validated; publish it again`, { retryable: true });
  }
  return [{ type: 'FlowVersionPublished', flowId: command.flowId, version: command.version, bodyHash: target.bodyHash, actor: command.actor, at: command.at }];
}

function activate(command: Extract<FlowCommand, { type: 'ActivateFlowVersion' }>, flow: FlowAggregate): FlowRecord[] {
  const target = flowVersionOf(flow, command.version);
  if (target === undefined) throw flowNotFound(command.flowId, command.version);
  if (target.status !== 'Published') throw new ToolplaneError('CONFLICT', `${describe(command.flowId, command.version)} is a draft; publish it before activating it`);
  if (flow.activeVersion === command.version) return [];
  for (const definition of command.definitions) {
    if (!isEnabledFollower(definition, command.flowId)) continue;
    const differences = schemaDifferences(definition, target.body);
    if (differences.length > 0) {
      throw new ToolplaneError(
        'CONFLICT',
        `activating ${describe(command.flowId, command.version)} would break the enabled definition ${definition.name}, which follows the active version: its ${differences.join(' and ')} schema differs; disable it or make its schemas equal first`,
      );
    }
  }
  return [
    {
      type: 'FlowVersionActivated',
      flowId: command.flowId,
      version: command.version,
      ...(flow.activeVersion === undefined ? {} : { previousVersion: flow.activeVersion }),
      actor: command.actor,
      at: command.at,
    },
  ];
}

function evolveFlow(flow: FlowAggregate, record: FlowRecord): FlowAggregate {
  const replace = (version: number, change: (state: FlowVersionState) => FlowVersionState): FlowAggregate => ({
    ...flow,
    versions: flow.versions.map((state) => (state.version === version ? change(state) : state)),
  });
  switch (record.type) {
    case 'FlowDraftSaved': {
      const existing = flowVersionOf(flow, record.version);
      if (existing !== undefined) return replace(record.version, (state) => ({ ...state, body: record.body, bodyHash: record.bodyHash, updatedBy: record.actor, updatedAt: record.at }));
      const created: FlowVersionState = {
        version: record.version,
        status: 'Draft',
        body: record.body,
        bodyHash: record.bodyHash,
        createdBy: record.actor,
        createdAt: record.at,
        updatedBy: record.actor,
        updatedAt: record.at,
      };
      return { ...flow, flowId: record.flowId, versions: [...flow.versions, created] };
    }
    case 'FlowVersionPublished':
      return replace(record.version, (state) => ({ ...state, status: 'Published', publishedBy: record.actor, publishedAt: record.at }));
    case 'FlowVersionActivated':
      return { ...replace(record.version, (state) => ({ ...state, activatedBy: record.actor, activatedAt: record.at })), activeVersion: record.version };
  }
}

/** The Flow aggregate on the one write path. */
export const flowDecider: Decider<FlowAggregate, FlowCommand, FlowRecord> = {
  decide: (command, flow) => {
    switch (command.type) {
      case 'SaveFlowDraft':
        return saveDraft(command, flow);
      case 'PublishFlowVersion':
        return publish(command, flow);
      case 'ActivateFlowVersion':
        return activate(command, flow);
    }
  },
  evolve: evolveFlow,
  initialState: () => initialFlow,
};

/** One version of a Flow as the stored document callers read. */
export function flowVersionDocument(scope: Scope, flowId: string, flow: FlowAggregate, state: FlowVersionState): FlowVersion {
  return {
    tenant: scope.tenant,
    workspace: scope.workspace,
    flowId,
    version: state.version,
    status: state.status,
    active: flow.activeVersion === state.version,
    body: state.body,
    bodyHash: state.bodyHash,
    createdBy: state.createdBy,
    createdAt: state.createdAt,
    updatedBy: state.updatedBy,
    updatedAt: state.updatedAt,
    ...(state.publishedBy === undefined ? {} : { publishedBy: state.publishedBy }),
    ...(state.publishedAt === undefined ? {} : { publishedAt: state.publishedAt }),
    ...(state.activatedBy === undefined ? {} : { activatedBy: state.activatedBy }),
    ...(state.activatedAt === undefined ? {} : { activatedAt: state.activatedAt }),
  };
}

/** Every version of a Flow without bodies, oldest first. */
export function flowVersionSummaries(flow: FlowAggregate): FlowVersionSummary[] {
  return flow.versions.map((state) => ({
    version: state.version,
    status: state.status,
    active: flow.activeVersion === state.version,
    bodyHash: state.bodyHash,
    createdAt: state.createdAt,
    updatedAt: state.updatedAt,
    ...(state.publishedAt === undefined ? {} : { publishedAt: state.publishedAt }),
  }));
}
