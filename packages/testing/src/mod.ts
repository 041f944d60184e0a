export { eventually } from './eventually.js';
export { freePort, startInfra, type Infra, type InfraKind } from './infra.js';
export { testScope, uniqueName, type TestScope } from './scope.js';
