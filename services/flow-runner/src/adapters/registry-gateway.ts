import {
  commandSubject,
  registryCommandSchemas,
  registryOperations,
  type PublishFlowToolReply,
  type PublishFlowToolRequest,
  type RetireFlowToolReply,
  type RetireFlowToolRequest,
  type Scope,
} from '@toolplane/contracts';
import { bearerHeaders } from '@toolplane/auth';
import { request, type Messaging } from '@toolplane/messaging';

// FlowRunner asks the registry (which owns ToolDescriptors) to publish or retire a definition's tool, over core NATS
// request/reply as an operator client does, carrying the operator token of the change it materializes: the registry
// verifies it and records that operator as who published the tool.

/** The registry's operations FlowRunner calls to materialize ToolDefinitions. */
export interface RegistryGateway {
  /** Publishes (or re-publishes) a definition's tool `flows.<definitionName>` at the definition's version. */
  publishFlowTool(scope: Scope, body: PublishFlowToolRequest, operatorToken: string, signal?: AbortSignal): Promise<PublishFlowToolReply>;
  /** Retires a deleted definition's tool. */
  retireFlowTool(scope: Scope, body: RetireFlowToolRequest, operatorToken: string, signal?: AbortSignal): Promise<RetireFlowToolReply>;
}

/** Options of the registry gateway. */
export interface RegistryGatewayOptions {
  /** How long the registry has to answer one request. */
  readonly timeoutMs: number;
}

/** The registry gateway on a NATS connection. */
export function registryGateway(messaging: Messaging, options: RegistryGatewayOptions): RegistryGateway {
  const common = (scope: Scope, operation: string, operatorToken: string, signal?: AbortSignal) => ({
    subject: commandSubject(scope, 'registry', operation),
    timeoutMs: options.timeoutMs,
    headers: bearerHeaders(operatorToken),
    ...(signal === undefined ? {} : { signal }),
  });
  const { publishFlowTool, retireFlowTool } = registryCommandSchemas;
  return {
    publishFlowTool: (scope, body, operatorToken, signal) =>
      request(messaging, { ...common(scope, registryOperations.publishFlowTool, operatorToken, signal), requestSchema: publishFlowTool.request, replySchema: publishFlowTool.reply, body }),
    retireFlowTool: (scope, body, operatorToken, signal) =>
      request(messaging, { ...common(scope, registryOperations.retireFlowTool, operatorToken, signal), requestSchema: retireFlowTool.request, replySchema: retireFlowTool.reply, body }),
  };
}
