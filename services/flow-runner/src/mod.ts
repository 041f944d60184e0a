export { consumeFlowWork, flowWorkConsumer, FLOW_WORK_CONSUMER } from './adapters/work-consumer.js';
export { StepSigningKeySetting, flowAgentId, stepTokenIssuer } from './adapters/step-tokens.js';
export { flowFailpoints, runFlow, stepToolCallId, type FlowSource, type RunFlowDeps } from './app/run-flow.js';
export { flowRunnerConfig, flowRunnerService, recordFlowSource, type FlowRunnerConfig } from './service.js';
