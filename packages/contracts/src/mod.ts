export { DeadLetter } from './dead-letter.js';
export { ErrorCode, WireError, ToolplaneError, errorCatalog, fromWireError, hasErrorCode, isRetryable, toWireError } from './errors.js';
export { replyEnvelope, type ReplyEnvelope } from './reply.js';
