export {
  ConfigError,
  baseServiceConfig,
  loadConfig,
  millisecondsSetting,
  mongoUrlSetting,
  natsUrlSetting,
  portSetting,
  storelessServiceConfig,
  type BaseServiceConfig,
  type StorelessServiceConfig,
} from './config.js';
export { logConsumerDiagnostic } from './diagnostics.js';
export { armFailpoints, failpoint, parseFailpoints, type FailpointAction } from './failpoint.js';
export { startHealthServer, type HealthServer, type HttpRouteHandler, type ReadinessCheck } from './health-server.js';
export { createLogger, redactedPaths, type Logger } from './logger.js';
export {
  StartupError,
  redactUrl,
  runService,
  startService,
  type HttpAddress,
  type RunningService,
  type ServiceContext,
  type ServiceDefinition,
  type StoreReadiness,
  type StorelessServiceContext,
  type StorelessServiceDefinition,
} from './run-service.js';
export {
  latencyBuckets,
  metricPrefix,
  overflowLabel,
  serviceMetrics,
  type MetricCounter,
  type MetricGauge,
  type MetricHistogram,
  type MetricSpec,
  type ServiceMetrics,
} from './service-metrics.js';
export { ShutdownStack } from './shutdown.js';
export { type StoreCollections, type StoreStatus } from './store-monitor.js';
export {
  recordSpansInMemory,
  startTracing,
  tracingSettings,
  type InMemoryTracing,
  type ReadableSpan,
  type Tracing,
  type TracingOptions,
  type TracingSettings,
} from './tracing.js';
