// The agent-runtime side of governed calls in the benchmark: a request per call on the invocation work queue
// (unique idempotency key, its own reply inbox), replies collected on one subscription for the whole scope.
import { InvocationRequest, invocationReplySubject, invocationRequestMsgId, invocationRequestSubject, type Scope } from '@toolplane/contracts';
import { publish, type Messaging } from '@toolplane/messaging';
import type { CallOutcome, LatencyRecorder } from '@toolplane/testing/bench';
import { epochMs, type StageTimeline } from './stage-timeline.js';

const replyTimeoutMs = 30_000;

/** Requests and replies of governed calls: unique keys, one reply inbox each, replies on one subscription. */
export class GovernedCaller {
  readonly #messaging: Messaging;
  readonly #scope: Scope;
  readonly #toolId: string;
  readonly #token: string;
  readonly #run: string;
  readonly #pending = new Map<string, { readonly key: string; readonly started: number; readonly sentAt: number; readonly recorder: LatencyRecorder; readonly done: (outcome: CallOutcome) => void }>();
  readonly #unanswered = new Set<string>();
  readonly #succeeded: string[] = [];
  #subscription: { unsubscribe(): void } | undefined;
  #sequence = 0;
  accepted = 0;
  replied = 0;
  failedReplies = 0;
  /** The idempotency key of the call made last. */
  lastKey = '';
  /** What the last reply that was not SUCCESS said (code and message, or the status), for diagnostics. */
  lastFailure: string | undefined;

  /** Where replies report their invocation's send and reply times, if anywhere. */
  timeline: StageTimeline | undefined;

  constructor(messaging: Messaging, scope: Scope, toolId: string, token: string, run: string) {
    this.#messaging = messaging;
    this.#scope = scope;
    this.#toolId = toolId;
    this.#token = token;
    this.#run = run;
  }

  async start(): Promise<void> {
    const filter = invocationReplySubject(this.#scope, 'x').replace(/\.x$/, '.*');
    this.#subscription = this.#messaging.connection.subscribe(filter, {
      callback: (error, message) => {
        if (error !== null) return;
        const inbox = message.subject.slice(message.subject.lastIndexOf('.') + 1);
        const waiting = this.#pending.get(inbox);
        if (waiting === undefined) return;
        this.#pending.delete(inbox);
        this.#unanswered.delete(waiting.key);
        this.replied += 1;
        const reply = JSON.parse(message.string()) as { ok: boolean; data?: { status?: string; receipt?: { invocationId?: string; failure?: { code?: string; message?: string } } }; error?: { code?: string; message?: string } };
        const invocationId = reply.data?.receipt?.invocationId;
        if (invocationId !== undefined) this.timeline?.replied(invocationId, waiting.sentAt, epochMs());
        const ok = reply.ok && reply.data?.status === 'SUCCESS';
        if (ok) this.#succeeded.push(waiting.key);
        else {
          this.failedReplies += 1;
          const problem = reply.error ?? reply.data?.receipt?.failure;
          this.lastFailure = problem === undefined ? `status ${reply.data?.status ?? 'unknown'}` : `${problem.code ?? '?'}: ${problem.message ?? ''}`;
        }
        waiting.recorder.record(performance.now() - waiting.started, ok);
        waiting.done(ok ? 'ok' : 'failed');
      },
    });
    await this.#messaging.connection.flush();
  }

  /** One governed call: resolves with its reply, or 'timeout' (the call stays owed, for the drain and the loss count). */
  async call(recorder: LatencyRecorder): Promise<CallOutcome> {
    this.#sequence += 1;
    const key = `bench-${this.#run}-${this.#sequence}`;
    this.lastKey = key;
    const inbox = `i${this.#sequence}`;
    const request: InvocationRequest = { toolId: this.#toolId, arguments: { text: key }, idempotencyKey: key, correlationId: `bench-${this.#run}`, contextToken: this.#token, replyInbox: inbox };
    const started = performance.now();
    const replied = new Promise<CallOutcome>((resolve) => this.#pending.set(inbox, { key, started, sentAt: epochMs(), recorder, done: resolve }));
    this.#unanswered.add(key);
    try {
      await publish(this.#messaging, { subject: invocationRequestSubject(this.#scope), schema: InvocationRequest, message: request, msgId: invocationRequestMsgId(this.#scope, request) });
    } catch {
      // Not accepted by JetStream: neither owed nor lost.
      this.#pending.delete(inbox);
      this.#unanswered.delete(key);
      recorder.record(performance.now() - started, false);
      return 'failed';
    }
    this.accepted += 1;
    let timer: NodeJS.Timeout | undefined;
    const timedOut = new Promise<CallOutcome>((resolve) => (timer = setTimeout(() => resolve('timeout'), replyTimeoutMs)));
    const outcome = await Promise.race([replied, timedOut]);
    clearTimeout(timer);
    return outcome;
  }

  get owed(): number {
    return this.#unanswered.size;
  }

  /** Waits until every accepted request has its reply, or `ms` passed. */
  async drain(ms: number): Promise<void> {
    const until = Date.now() + ms;
    while (this.#unanswered.size > 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 100));
  }

  unanswered(): string[] {
    return [...this.#unanswered];
  }

  succeededKeys(): string[] {
    return this.#succeeded;
  }

  stop(): void {
    this.#subscription?.unsubscribe();
  }
}
