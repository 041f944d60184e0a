import type { TokenVerifier } from '@toolplane/auth';
import type { DescriptorCache, Messaging } from '@toolplane/messaging';
import type { Logger } from '@toolplane/service-kit';
import type { ApprovalGateway } from '../adapters/approval-gateway.js';
import type { CredentialLeaser } from '../adapters/credential-leaser.js';
import type { FlowRunnerGateway } from '../adapters/flow-runner-gateway.js';
import type { InvocationCalls } from '../adapters/invocation-store.js';
import type { McpExecutor } from '../adapters/mcp-executor.js';
import type { PolicySource } from '../adapters/policy-source.js';
import type { RateCounters } from '../adapters/rate-counters.js';
import type { ServerDirectory } from '../adapters/server-directory.js';
import type { ArgumentValidators } from '../core/argument-validation.js';
import type { ReceiptSigner } from '../core/receipts.js';
import type { InvocationObserver } from './invocation-observer.js';
import type { InvocationOutlet } from './publishing.js';
import type { StdioSandboxSetting } from './sandbox-stage.js';

/** Everything the invocation handlers use: the ports, the clock and the id generator, built by start(). */
export interface InvocationRuntime {
  readonly messaging: Messaging;
  /** The ToolInvocation aggregate's store (the adapter's private stream). */
  readonly calls: InvocationCalls;
  /** Where lifecycle events and replies go. */
  readonly outlet: InvocationOutlet;
  readonly descriptors: DescriptorCache;
  readonly servers: ServerDirectory;
  readonly executor: McpExecutor;
  /** Where flow-backed tools (kind Flow) execute: FlowRunner, through its work queue. */
  readonly flows: FlowRunnerGateway;
  readonly approvals: ApprovalGateway;
  /** Leases credentials from the secret broker; undefined without a sealing key (calls needing credentials are refused). */
  readonly leaser?: CredentialLeaser | undefined;
  readonly validators: ArgumentValidators;
  readonly policies: PolicySource;
  readonly rateCounters: RateCounters;
  readonly verifier: TokenVerifier;
  readonly signReceipt: ReceiptSigner;
  readonly clock: () => Date;
  /** A monotonic clock in milliseconds (fractions included) for stage timings; no wall time is read from it. */
  readonly elapsedMs: () => number;
  /** Where the pipeline driver reports stage timings, parked and ended calls (the adapter's metrics). */
  readonly observer: InvocationObserver;
  readonly newId: () => string;
  readonly logger: Logger;
  /** The deadline of a call whose tool is unknown (a known tool's descriptor gives its own). */
  readonly defaultTimeoutMs: number;
  /** How stdio servers are sandboxed (the pool's setting; absent: bubblewrap, as the MCP adapter defaults to). */
  readonly sandbox?: StdioSandboxSetting | undefined;
}
