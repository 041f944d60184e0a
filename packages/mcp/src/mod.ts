// The public entry of @toolplane/mcp: MCP clients for consumed servers (stdio and Streamable HTTP), a session
// pool, error translation into the contract's codes, and tool definition hashing. The only importer of the SDK.
export { toDiscoveredPrompt, toDiscoveredResource, toDiscoveredResourceTemplate, toDiscoveredTool, toolDefinitionHash } from './definition-hash.js';
export type {
  JsonRecord,
  McpCompletion,
  McpCompletionRef,
  McpCompletionRequest,
  McpContentAnnotations,
  McpContentBlock,
  McpImplementation,
  McpList,
  McpPrompt,
  McpPromptArgument,
  McpPromptMessages,
  McpResource,
  McpResourceContents,
  McpResourceTemplate,
  McpServerCapabilities,
  McpTool,
  McpToolResult,
} from './model.js';
export { DEFAULT_PAGE_LIMITS, type PageLimits } from './pagination.js';
export { defaultSandboxUser, findBwrap, type StdioSandboxMode, type StdioSandboxOptions } from './sandbox.js';
export { createMcpPool, type McpPool, type McpPoolOptions } from './pool.js';
export {
  MCP_DEFAULTS,
  connectMcp,
  minimalPath,
  type McpConnectOptions,
  type McpEraVerdict,
  type McpListOptions,
  type McpRequestOptions,
  type McpSession,
} from './session.js';
export { describeTarget, mcpTargetKey, validateTarget, type McpHttpTarget, type McpStdioTarget, type McpTarget } from './target.js';
export { toToolFailure, toolResultError, type ToolResultErrorOptions } from './tool-failure.js';
