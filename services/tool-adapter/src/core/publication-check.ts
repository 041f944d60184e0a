import {
  DEFAULT_CLEARANCE,
  compareDataClassifications,
  compareRiskClasses,
  compareSideEffectClasses,
  type AgentProfile,
  type DataClassification,
  type PublicationConflict,
  type RiskClass,
  type SideEffectClass,
} from '@toolplane/contracts';
import { firstMatchingToolPattern } from './tool-patterns.js';

// Publication-time validation (model rule D21): a tool bound (or re-bound with another class) is checked against
// every agent profile of the workspace that lists it, by the same rules agent permission applies at call time
// (allowedTools matches, deniedTools does not; the class and risk ceilings), so an operator hears of an agent that
// lists a tool it can never call when the tool is published, not from a denial later. The declared class is the
// floor of every call's effective class (environment and policy only raise it), so a declared class above an
// agent's ceiling is a conflict for every call; raises that depend on the workspace or arguments are not guessed at.
// A resource's classification above an agent's clearance is one too: every read of it would be denied.

/** A tool as it is being published: its id and declared classes. */
export interface PublishedTool {
  readonly toolId: string;
  readonly sideEffectClass: SideEffectClass;
  readonly riskClass: RiskClass;
  /** A resource's data classification: an agent cleared below it can never read it. */
  readonly classification?: DataClassification | undefined;
}

/** The conflicts of a tool with the profiles that list it, by agent id. */
export function publicationConflicts(tool: PublishedTool, profiles: readonly AgentProfile[]): PublicationConflict[] {
  const conflicts: PublicationConflict[] = [];
  for (const profile of profiles) {
    const listedBy = firstMatchingToolPattern(profile.allowedTools, tool.toolId);
    if (listedBy === undefined || firstMatchingToolPattern(profile.deniedTools, tool.toolId) !== undefined) continue;
    if (profile.maxSideEffectClass !== undefined && compareSideEffectClasses(tool.sideEffectClass, profile.maxSideEffectClass) > 0) {
      conflicts.push({
        agentId: profile.agentId,
        code: 'CLASS_ABOVE_AGENT_MAX',
        reason: `${tool.toolId} is ${tool.sideEffectClass}; the agent lists it (pattern ${listedBy}) but may cause at most ${profile.maxSideEffectClass}`.slice(0, 512),
      });
    }
    if (compareRiskClasses(tool.riskClass, profile.maxRiskClass) > 0) {
      conflicts.push({
        agentId: profile.agentId,
        code: 'RISK_ABOVE_AGENT_MAX',
        reason: `${tool.toolId} is ${tool.riskClass} risk; the agent lists it (pattern ${listedBy}) but may use at most ${profile.maxRiskClass}`.slice(0, 512),
      });
    }
    const clearance = profile.clearance ?? DEFAULT_CLEARANCE;
    if (tool.classification !== undefined && compareDataClassifications(tool.classification, clearance) > 0) {
      conflicts.push({
        agentId: profile.agentId,
        code: 'CLASSIFICATION_ABOVE_CLEARANCE',
        reason: `${tool.toolId} is ${tool.classification}; the agent lists it (pattern ${listedBy}) but is cleared for ${clearance} at most`.slice(0, 512),
      });
    }
  }
  return conflicts.sort((a, b) => (a.agentId < b.agentId ? -1 : a.agentId > b.agentId ? 1 : a.code < b.code ? -1 : a.code > b.code ? 1 : 0));
}
