// POSTs one signed webhook body. Only the status comes back: the receiver's reply body is discarded unread, and
// nothing here logs (the caller logs the outcome, never the URL's query, the secret or the body).
import type { WebhookResponse } from '../core/approval-webhook.js';

/** One POST of a webhook. */
export interface WebhookPost {
  readonly url: string;
  readonly body: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly timeoutMs: number;
  readonly signal: AbortSignal;
}

/**
 * Sends the POST and resolves with the status, or with a one-line failure (timeout, refused connection, …); it
 * rejects only when `signal` aborted, so a stopping consumer hands the event back instead of counting a failure.
 * Redirects are not followed: a receiver that moved is a misconfiguration to surface, not a hop to take with a
 * signed request.
 */
export async function postWebhook(post: WebhookPost): Promise<WebhookResponse> {
  const timeout = AbortSignal.timeout(post.timeoutMs);
  try {
    const response = await fetch(post.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', ...post.headers },
      body: post.body,
      redirect: 'manual',
      signal: AbortSignal.any([post.signal, timeout]),
    });
    // Free the connection without reading what the receiver said.
    await response.body?.cancel().catch(() => undefined);
    return { status: response.status };
  } catch (error) {
    post.signal.throwIfAborted();
    if (timeout.aborted) return { failure: `no answer within ${post.timeoutMs} ms` };
    return { failure: failureOf(error) };
  }
}

// fetch's own message is a bare "fetch failed"; the cause's code (ECONNREFUSED, ENOTFOUND, …) says what happened.
function failureOf(error: unknown): string {
  const cause = error instanceof Error ? (error.cause as { code?: unknown } | undefined) : undefined;
  if (typeof cause?.code === 'string') return `request failed: ${cause.code}`;
  return 'request failed';
}
