// What the benchmarks share (`@toolplane/testing/bench`): the servers they run against, built services as child
// processes, the echo tool and its count file, load shapes, CPU costs and CPU profiles. Harnesses, not tests.
export { readCpuProfile, summarizeCpuProfile, type CpuProfile, type CpuProfileSummary } from './cpu-profile-summary.js';
export { duplicatedExecutions, echoServerPath, executionsByKey, startHttpEcho, type HttpEchoServer } from './echo-server.js';
export { LatencyRecorder, closedLoop, describePhase, openLoop, type CallOutcome, type PhaseResult } from './load.js';
export { countLost, firstSuccess, type OutcomeLookup } from './outcomes.js';
export { benchInfra, type BenchInfra } from './local-servers.js';
export { counterDelta, cpuMsPerCall, processCpuMs, sampleCpu, scrapeCounters } from './metrics.js';
export { benchSettings, type BenchSettings } from './settings.js';
export { startServiceProcess, stopChild, type ServiceProcess, type ServiceProcessOptions } from './service-process.js';
