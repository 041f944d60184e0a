// The approval service's request/reply operations (`tp.v1.cmd.{tenant}.{workspace}.approval.{operation}`), one
// queue group across replicas. Scope is the subject's; humans authenticate with an operator token in the
// Authorization header, which is read here and never logged.
import {
  ToolplaneError,
  approvalCommandSchemas,
  commandFilter,
  scopeOfSubject,
  type ApprovalReply,
  type ApproveApprovalRequest,
  type ConsumeApprovalRequest,
  type ListApprovalsReply,
  type ListApprovalsRequest,
  type OperatorClaims,
  type RejectApprovalRequest,
  type Scope,
  type ShowApprovalRequest,
} from '@toolplane/contracts';
import { verifyOperator, type TokenVerifier } from '@toolplane/auth';
import { serve, type RequestContext, type ServeDiagnostic, type ServeHandle } from '@toolplane/messaging';
import { listApprovals } from '../adapters/approval-read-model.js';
import type { CommandMetadata, DecidingHuman } from '../core/approval-decider.js';
import { readApproval, runCommand, type ApprovalRuntime } from './approval-runtime.js';

type Operation = keyof typeof approvalCommandSchemas;
interface Requests {
  list: ListApprovalsRequest;
  show: ShowApprovalRequest;
  approve: ApproveApprovalRequest;
  reject: RejectApprovalRequest;
  consume: ConsumeApprovalRequest;
}
interface Replies {
  list: ListApprovalsReply;
  show: ApprovalReply;
  approve: ApprovalReply;
  reject: ApprovalReply;
  consume: ApprovalReply;
}
type Handler<O extends Operation> = (request: Requests[O], scope: Scope, context: RequestContext) => Promise<Replies[O]>;

/** The operator behind a request: its verified token's claims, or AUTHENTICATION_FAILED. */
function operatorOf(verifier: TokenVerifier, scope: Scope, context: RequestContext): Promise<OperatorClaims> {
  return verifyOperator(verifier, scope, context.headers);
}

function deciderOf(claims: OperatorClaims): DecidingHuman {
  return { principal: claims.principal, tenant: claims.tenant, workspaces: claims.workspaces, roles: claims.roles };
}

function metadataOf(runtime: ApprovalRuntime, scope: Scope, approvalId: string): CommandMetadata {
  return { approvalId, scope, now: runtime.clock() };
}

/** The handlers of each operation, given the scope of the subject they were asked on. */
function handlers(runtime: ApprovalRuntime, verifier: TokenVerifier): { [O in Operation]: Handler<O> } {
  return {
    // The read model: the one operation that needs MongoDB (and may lag a command by a moment).
    list: async (request, scope, context) => {
      await operatorOf(verifier, scope, context);
      return listApprovals(runtime.approvals, scope, request, context.signal);
    },
    // The record: an approval as its stream holds it, right after any command.
    show: async (request, scope, context) => {
      await operatorOf(verifier, scope, context);
      const approval = await readApproval(runtime, scope, request.approvalId, context.signal);
      if (approval === null) throw new ToolplaneError('NOT_FOUND', `no approval ${request.approvalId} in ${scope.tenant}/${scope.workspace}`);
      return { approval };
    },
    approve: async (request, scope, context) => {
      const decider = deciderOf(await operatorOf(verifier, scope, context));
      const command = { type: 'GrantApproval', data: { decider, reason: request.reason }, metadata: metadataOf(runtime, scope, request.approvalId) } as const;
      const { approval, changed } = await runCommand(runtime, request.approvalId, command, context.signal);
      if (changed) runtime.logger.info({ approvalId: approval.approvalId, decidedBy: decider.principal }, 'approval granted');
      return { approval };
    },
    reject: async (request, scope, context) => {
      const decider = deciderOf(await operatorOf(verifier, scope, context));
      const command = { type: 'RejectApproval', data: { decider, reason: request.reason }, metadata: metadataOf(runtime, scope, request.approvalId) } as const;
      const { approval, changed } = await runCommand(runtime, request.approvalId, command, context.signal);
      if (changed) runtime.logger.info({ approvalId: approval.approvalId, decidedBy: decider.principal }, 'approval rejected');
      return { approval };
    },
    // The tool adapter's: NATS permissions decide who may publish on this subject; the binding decides the rest.
    consume: async (request, scope, context) => {
      const command = { type: 'ConsumeApproval', data: { requestHash: request.requestHash, toolVersion: request.toolVersion }, metadata: metadataOf(runtime, scope, request.approvalId) } as const;
      const { approval } = await runCommand(runtime, request.approvalId, command, context.signal);
      runtime.logger.info({ approvalId: approval.approvalId, invocationId: request.invocationId }, 'approval consumed');
      return { approval };
    },
  };
}

/** Starts a responder per operation in queue group `approval`; resolves once all are subscribed. */
export async function serveApprovalCommands(runtime: ApprovalRuntime, verifier: TokenVerifier, signal?: AbortSignal): Promise<ServeHandle[]> {
  const log = runtime.logger.child({ component: 'commands' });
  const onDiagnostic = (diagnostic: ServeDiagnostic) => {
    // Subjects and codes only: never the request, its headers, or the reply.
    if (diagnostic.type === 'handler_failed') {
      const level = diagnostic.reply.code === 'INTERNAL' || diagnostic.reply.code === 'TEMPORARY_UNAVAILABLE' ? 'warn' : 'info';
      log[level]({ subject: diagnostic.subject, code: diagnostic.reply.code, reason: diagnostic.reply.message, ...(level === 'warn' ? { err: diagnostic.error } : {}) }, 'request refused');
    } else if (diagnostic.type === 'invalid_request') log.info({ subject: diagnostic.subject, code: diagnostic.reply.code }, 'invalid request');
    else log.warn({ subject: diagnostic.subject, type: diagnostic.type, ...('error' in diagnostic ? { err: diagnostic.error } : {}) }, 'responder problem');
  };
  const all = handlers(runtime, verifier);
  const serveOne = <O extends Operation>(operation: O) => {
    const schemas = approvalCommandSchemas[operation];
    const handler = all[operation] as Handler<O>;
    return serve(runtime.messaging, {
      subject: commandFilter('approval', { operation }),
      queue: 'approval',
      requestSchema: schemas.request,
      replySchema: schemas.reply,
      handler: (request, context) => handler(request as Requests[O], scopeOfSubject(context.subject), context),
      ...(signal ? { signal } : {}),
      onDiagnostic,
    });
  };
  return Promise.all((Object.keys(approvalCommandSchemas) as Operation[]).map((operation) => serveOne(operation)));
}
