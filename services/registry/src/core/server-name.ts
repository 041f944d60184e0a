import { ToolplaneError, type ServerNameRecord } from '@toolplane/contracts';
import type { Decider } from '@toolplane/event-store';

// The server-name aggregate: one per (workspace, name), so that of many registrations of a name racing on several
// replicas exactly one server holds it. A retired holder frees the name; the same registration again is the same
// server.

/** Who holds the name (undefined: nobody ever did). */
export type ServerNameClaim = { readonly serverId: string; readonly registrationHash: string } | undefined;

/**
 * A claim of the name for a new server. `retiredHolder` is the holder the caller found Retired (retiring is final,
 * so that stays true): only that holder gives the name up.
 */
export interface ClaimServerName {
  readonly type: 'ClaimServerName';
  readonly name: string;
  readonly serverId: string;
  readonly registrationHash: string;
  readonly retiredHolder?: string | undefined;
  readonly at: string;
}

/** The server-name aggregate as a Decider: claimed when free; the same registration again changes nothing; another one is CONFLICT. */
export const serverNameDecider: Decider<ServerNameClaim, ClaimServerName, ServerNameRecord> = {
  decide(command, state) {
    if (state === undefined || state.serverId === command.retiredHolder) {
      return [{ type: 'ServerNameClaimed', serverId: command.serverId, registrationHash: command.registrationHash, at: command.at }];
    }
    if (state.registrationHash === command.registrationHash) return [];
    throw new ToolplaneError('CONFLICT', `a server named ${command.name} is registered already (${state.serverId}) with another configuration: retire it (in any state) to register the name anew`, {
      details: { serverId: state.serverId },
    });
  },
  evolve: (_state, event) => ({ serverId: event.serverId, registrationHash: event.registrationHash }),
  initialState: () => undefined,
};
