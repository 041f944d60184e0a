import { POLICY_ADMIN_ROLE } from '@toolplane/contracts';
import type { OperatorRequirement } from '@toolplane/auth';
import type { Broker } from './broker.js';

// Who may call each operation. Connection management is a human operator's, with an operator token of the
// subject's scope (`Authorization: Bearer …`); changing a connection (which tools may lease which credential) is
// policy administration, so it needs POLICY_ADMIN_ROLE, and reading its metadata any operator token. A lease is
// the tool adapter's: NATS permissions decide who may publish on its subject, and the recipient key decides who can
// open what it returns.

/** `service`: no token (NATS permissions decide); otherwise an operator token of the scope holding the role, if one is named. */
export type BrokerAccess = 'service' | OperatorRequirement;

/** Who may call each of the broker's operations. */
export const brokerAccess = {
  createConnection: { role: POLICY_ADMIN_ROLE },
  rotateConnection: { role: POLICY_ADMIN_ROLE },
  revokeConnection: { role: POLICY_ADMIN_ROLE },
  listConnections: {},
  showConnection: {},
  leaseSecret: 'service',
} as const satisfies Record<keyof Broker, BrokerAccess>;
