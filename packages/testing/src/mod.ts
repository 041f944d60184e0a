export { eventually } from './eventually.js';
export { freePort, startInfra, startLocalServers, type Infra, type InfraKind, type LocalServers } from './infra.js';
export { startPrivateFerretDb, type PrivateFerretDb } from './private-ferretdb.js';
export { testScope, uniqueName, type TestScope } from './scope.js';
