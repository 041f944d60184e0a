// The public entry of @toolplane/console: start the operator console in-process (tests, embedding).
export { CONSOLE_PORT, consoleConfig, type ConsoleConfig } from './config.js';
export { consoleService, startConsole, type RunningConsole } from './service.js';
export { CONTENT_SECURITY_POLICY } from './core/http-policy.js';
export { SESSION_COOKIE } from './core/session-seal.js';
