import { TenantId, WorkspaceId } from '@toolplane/contracts';

/** The read models an agent's effective tool set is computed from (the adapter's inputs), each a KV bucket. */
export const toolSetSources = ['descriptors', 'profiles', 'policies', 'bundles'] as const;
export type ToolSetSource = (typeof toolSetSources)[number];

/** Whose tool sets a change may alter: one workspace, or every workspace of a tenant (`workspace` undefined). */
export interface ToolSetChange {
  readonly tenant: string;
  readonly workspace: string | undefined;
}

/**
 * The scope a changed entry belongs to, from its key alone (the value is the adapter's to interpret): descriptors
 * (`tenant.workspace.tool.version`) and agent profiles (`tenant.workspace.agent`) belong to a workspace, a tenant
 * policy (`tenant`, kill switches included) and a server policy bundle (`tenant.name`: any server of the tenant may
 * name it) to every workspace of its tenant. Undefined for a key of no known shape.
 */
export function toolSetChangeOf(source: ToolSetSource, key: string): ToolSetChange | undefined {
  const [tenant, workspace] = key.split('.');
  if (tenant === undefined || !TenantId.safeParse(tenant).success) return undefined;
  if (source === 'policies') return key === tenant ? { tenant, workspace: undefined } : undefined;
  if (source === 'bundles') return workspace === undefined ? undefined : { tenant, workspace: undefined };
  if (workspace === undefined || !WorkspaceId.safeParse(workspace).success) return undefined;
  return { tenant, workspace };
}

/** Whether a change may alter the tool set of a caller in `scope`. */
export function changeCovers(change: ToolSetChange, scope: { readonly tenant: string; readonly workspace: string }): boolean {
  return change.tenant === scope.tenant && (change.workspace === undefined || change.workspace === scope.workspace);
}
