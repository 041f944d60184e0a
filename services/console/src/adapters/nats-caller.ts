// The service caller over NATS request/reply: the command subject of the scope, the operator token in the
// Authorization header (never in a body, never logged), the console's timeout, the request's abort signal.
import { bearerHeaders } from '@toolplane/auth';
import { commandSubject } from '@toolplane/contracts';
import { request, type Messaging } from '@toolplane/messaging';
import type { ServiceCaller } from '../app/service-caller.js';

/** A caller on `messaging` whose requests wait at most `timeoutMs` unless a request says otherwise. */
export function natsServiceCaller(messaging: Messaging, timeoutMs: number): ServiceCaller {
  return (call) =>
    request(messaging, {
      subject: commandSubject(call.scope, call.service, call.operation),
      requestSchema: call.schemas.request,
      replySchema: call.schemas.reply,
      body: call.body,
      timeoutMs: call.timeoutMs ?? timeoutMs,
      headers: bearerHeaders(call.token),
      signal: call.signal,
    });
}
