import { z } from 'zod';
import { ToolplaneError } from './errors.js';
import { type EventType, type LifecycleEvent, EventFamily, eventFamilyOf, eventTypesByFamily, isEventType } from './lifecycle-event.js';
import { SUBJECT_TOKEN_PATTERN, type Scope } from './primitives.js';

// The subject map. Every subject starts with `tp.v1`: the wire version lives here, not in message bodies.
// Scoped subjects carry tenant and workspace as tokens, so NATS permissions can pin a credential to its scope
// and a consumer can trust the scope of a message from its subject alone.
//
//   tp.v1.inv.{tenant}.{workspace}.request                     invocation requests  (stream TOOLPLANE_INVOCATIONS)
//   tp.v1.rpl.{tenant}.{workspace}.{inbox}                     invocation replies   (core NATS)
//   tp.v1.evt.{tenant}.{workspace}.{family}.{EventType}        lifecycle events     (stream TOOLPLANE_EVENTS)
//   tp.v1.cmd.{tenant}.{workspace}.{service}.{operation}       request/reply        (core NATS)
//   tp.v1.dlq.{stream}.{consumer}                              dead letters         (stream TOOLPLANE_DEAD_LETTERS)

/** The prefix of every v1 subject. */
export const SUBJECT_PREFIX = 'tp.v1';

/** The services that answer request/reply commands. */
export const CommandService = z.enum(['registry', 'approval', 'secrets', 'adapter', 'audit', 'flows']);
export type CommandService = z.infer<typeof CommandService>;

const OPERATION_PATTERN = /^[a-z][A-Za-z0-9]{0,63}$/;
// Stream and consumer names may be longer than scope ids (test harnesses prefix them).
const NAME_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

function token(what: string, value: string, pattern: RegExp = SUBJECT_TOKEN_PATTERN): string {
  if (!pattern.test(value)) {
    throw new ToolplaneError('INVALID_ARGUMENT', `${what} ${JSON.stringify(value)} is not a safe subject token (${pattern.source})`);
  }
  return value;
}

function commandService(value: string): CommandService {
  const service = CommandService.safeParse(value);
  if (!service.success) throw new ToolplaneError('INVALID_ARGUMENT', `unknown command service ${JSON.stringify(value)}`);
  return service.data;
}

function scopeTokens(scope: Scope): string {
  return `${token('tenant', scope.tenant)}.${token('workspace', scope.workspace)}`;
}

/** Where an agent runtime publishes invocation requests for its scope. */
export function invocationRequestSubject(scope: Scope): string {
  return `${SUBJECT_PREFIX}.inv.${scopeTokens(scope)}.request`;
}

/** Where the tool adapter sends the reply to a request that named `replyInbox`. */
export function invocationReplySubject(scope: Scope, inbox: string): string {
  return `${SUBJECT_PREFIX}.rpl.${scopeTokens(scope)}.${token('reply inbox', inbox)}`;
}

/** Where an event of this type is published for a scope; the family follows from the type. */
export function eventSubject(scope: Scope, type: EventType): string {
  if (!isEventType(type)) throw new ToolplaneError('INVALID_ARGUMENT', `unknown event type ${JSON.stringify(type)}`);
  return `${SUBJECT_PREFIX}.evt.${scopeTokens(scope)}.${eventFamilyOf(type)}.${type}`;
}

/** Where this event is published: its type, in the scope its metadata names. */
export function subjectOfEvent(event: LifecycleEvent): string {
  return eventSubject({ tenant: event.metadata.tenant, workspace: event.metadata.workspace }, event.type);
}

/** Where a service answers one request/reply operation (camelCase, like `getReceipt`) for a scope. */
export function commandSubject(scope: Scope, service: CommandService, operation: string): string {
  return `${SUBJECT_PREFIX}.cmd.${scopeTokens(scope)}.${commandService(service)}.${token('operation', operation, OPERATION_PATTERN)}`;
}

/** Where a consumer that gives up on a message of `stream` dead-letters it. */
export function deadLetterSubject(stream: string, consumer: string): string {
  return `${SUBJECT_PREFIX}.dlq.${token('stream', stream, NAME_PATTERN)}.${token('consumer', consumer, NAME_PATTERN)}`;
}

/** Narrows a filter: a given tenant or workspace, or any (`*`). */
export interface ScopeFilter {
  readonly tenant?: string | undefined;
  readonly workspace?: string | undefined;
}

function scopeFilter(filter: ScopeFilter): string {
  const tenant = filter.tenant === undefined ? '*' : token('tenant', filter.tenant);
  const workspace = filter.workspace === undefined ? '*' : token('workspace', filter.workspace);
  return `${tenant}.${workspace}`;
}

/** A filter over invocation requests: all of them, a tenant's, or one workspace's. */
export function invocationRequestFilter(filter: ScopeFilter = {}): string {
  return `${SUBJECT_PREFIX}.inv.${scopeFilter(filter)}.request`;
}

/** A filter over events: narrowed by scope and by family or type (all events of a tenant, all invocation events …). */
export function eventFilter(filter: ScopeFilter & { readonly family?: EventFamily | undefined; readonly type?: EventType | undefined } = {}): string {
  if (filter.type !== undefined) {
    if (!isEventType(filter.type)) throw new ToolplaneError('INVALID_ARGUMENT', `unknown event type ${JSON.stringify(filter.type)}`);
    const family = eventFamilyOf(filter.type);
    if (filter.family !== undefined && filter.family !== family) {
      throw new ToolplaneError('INVALID_ARGUMENT', `event type ${filter.type} is of family ${family}, not ${filter.family}`);
    }
    return `${SUBJECT_PREFIX}.evt.${scopeFilter(filter)}.${family}.${filter.type}`;
  }
  if (filter.family !== undefined && !EventFamily.safeParse(filter.family).success) {
    throw new ToolplaneError('INVALID_ARGUMENT', `unknown event family ${JSON.stringify(filter.family)}`);
  }
  const family = filter.family ?? '*';
  return `${SUBJECT_PREFIX}.evt.${scopeFilter(filter)}.${family}.*`;
}

/** A filter over a service's commands (what its queue-group subscription listens to), optionally narrowed. */
export function commandFilter(service: CommandService, filter: ScopeFilter & { readonly operation?: string | undefined } = {}): string {
  const operation = filter.operation === undefined ? '*' : token('operation', filter.operation, OPERATION_PATTERN);
  return `${SUBJECT_PREFIX}.cmd.${scopeFilter(filter)}.${commandService(service)}.${operation}`;
}

/** A filter over dead letters: all, one stream's, or one consumer's. */
export function deadLetterFilter(filter: { readonly stream?: string | undefined; readonly consumer?: string | undefined } = {}): string {
  const stream = filter.stream === undefined ? '*' : token('stream', filter.stream, NAME_PATTERN);
  const consumer = filter.consumer === undefined ? '*' : token('consumer', filter.consumer, NAME_PATTERN);
  return `${SUBJECT_PREFIX}.dlq.${stream}.${consumer}`;
}

/** What a v1 subject says, taken apart. */
export type ParsedSubject =
  | { readonly kind: 'invocationRequest'; readonly tenant: string; readonly workspace: string }
  | { readonly kind: 'invocationReply'; readonly tenant: string; readonly workspace: string; readonly inbox: string }
  | { readonly kind: 'event'; readonly tenant: string; readonly workspace: string; readonly family: EventFamily; readonly type: EventType }
  | { readonly kind: 'command'; readonly tenant: string; readonly workspace: string; readonly service: CommandService; readonly operation: string }
  | { readonly kind: 'deadLetter'; readonly stream: string; readonly consumer: string };

function unparsable(subject: string, why: string): ToolplaneError {
  return new ToolplaneError('INVALID_ARGUMENT', `not a v1 Toolplane subject (${why}): ${JSON.stringify(subject.slice(0, 300))}`);
}

/**
 * Takes a concrete v1 subject apart, validating every token exactly as the builders do, so that for every
 * subject a builder makes, parsing gives back its inputs. Throws INVALID_ARGUMENT for anything else
 * (wildcards, unknown kinds, bad tokens, an event type filed under the wrong family).
 */
export function parseSubject(subject: string): ParsedSubject {
  const tokens = subject.split('.');
  const [root, version, kind, first = '', second = '', third, fourth, ...rest] = tokens;
  const take = (what: string, value: string, pattern: RegExp = SUBJECT_TOKEN_PATTERN): string => {
    if (!pattern.test(value)) throw unparsable(subject, `bad ${what} token`);
    return value;
  };
  if (`${root}.${version}` !== SUBJECT_PREFIX) throw unparsable(subject, 'prefix');
  if (kind === 'dlq' && third === undefined) {
    return { kind: 'deadLetter', stream: take('stream', first, NAME_PATTERN), consumer: take('consumer', second, NAME_PATTERN) };
  }
  const scope = { tenant: take('tenant', first), workspace: take('workspace', second) };
  if (kind === 'inv' && third === 'request' && fourth === undefined) return { kind: 'invocationRequest', ...scope };
  if (kind === 'rpl' && third !== undefined && fourth === undefined) return { kind: 'invocationReply', ...scope, inbox: take('reply inbox', third) };
  if (kind === 'evt' && third !== undefined && fourth !== undefined && rest.length === 0) {
    const family = EventFamily.safeParse(third);
    if (!family.success) throw unparsable(subject, 'event family');
    const type = eventTypesByFamily[family.data].find((candidate) => candidate === fourth);
    if (type === undefined) throw unparsable(subject, `event type of family ${family.data}`);
    return { kind: 'event', ...scope, family: family.data, type };
  }
  if (kind === 'cmd' && third !== undefined && fourth !== undefined && rest.length === 0) {
    const service = CommandService.safeParse(third);
    if (!service.success) throw unparsable(subject, 'command service');
    return { kind: 'command', ...scope, service: service.data, operation: take('operation', fourth, OPERATION_PATTERN) };
  }
  throw unparsable(subject, 'shape');
}

/**
 * The scope a scoped subject names: the only place a consumer may take tenant and workspace from. Throws
 * INVALID_ARGUMENT for dead-letter and malformed subjects.
 */
export function scopeOfSubject(subject: string): Scope {
  const parsed = parseSubject(subject);
  if (parsed.kind === 'deadLetter') throw unparsable(subject, 'a dead-letter subject has no scope');
  return { tenant: parsed.tenant, workspace: parsed.workspace };
}

/**
 * Whether some subject matches both NATS filters (`*` one token, `>` one or more trailing tokens). Streams must
 * not overlap, or JetStream refuses the second; for a concrete subject it says whether a filter matches it.
 */
export function subjectFiltersOverlap(a: string, b: string): boolean {
  const left = a.split('.');
  const right = b.split('.');
  for (let i = 0; i < Math.max(left.length, right.length); i++) {
    const l = left[i];
    const r = right[i];
    if (l === undefined || r === undefined) return false;
    if (l === '>' || r === '>') return true;
    if (l !== '*' && r !== '*' && l !== r) return false;
  }
  return true;
}
