// The public entry of @toolplane/mcp-endpoint: start the governed MCP endpoint in-process (tests, embedding).
export { MCP_ENDPOINT_PORT, mcpEndpointConfig, type McpEndpointConfig } from './config.js';
export { endpointIdentity, mcpEndpointService, startMcpEndpoint, type RunningEndpoint } from './service.js';
export { MCP_PATH_PREFIX, RESOURCE_METADATA_PATH, resourceMetadataUrl, resourceUrl } from './core/route.js';
