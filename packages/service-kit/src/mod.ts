export { ConfigError, baseServiceConfig, loadConfig, millisecondsSetting, mongoUrlSetting, natsUrlSetting, portSetting, type BaseServiceConfig } from './config.js';
export { logConsumerDiagnostic } from './diagnostics.js';
export { armFailpoints, failpoint, parseFailpoints, type FailpointAction } from './failpoint.js';
export { startHealthServer, type HealthServer, type ReadinessCheck } from './health-server.js';
export { createLogger, redactedPaths, type Logger } from './logger.js';
export { StartupError, redactUrl, runService, startService, type RunningService, type ServiceContext, type ServiceDefinition } from './run-service.js';
export { ShutdownStack } from './shutdown.js';
