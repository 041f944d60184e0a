import { headers as natsHeaders, type MsgHdrs } from '@nats-io/nats-core';

/** Message headers as plain data: each name with its values. */
export type MessageHeaders = Readonly<Record<string, readonly string[]>>;

/** Header the JetStream server deduplicates on. */
export const msgIdHeader = 'Nats-Msg-Id';
/** Header by which JetStream stores a message only if its subject's last message still has this sequence (0: none yet). */
export const expectedLastSubjectSequenceHeader = 'Nats-Expected-Last-Subject-Sequence';
/** Header by which a requester tells the responder how long it will wait for the reply. */
export const timeoutHeader = 'Toolplane-Timeout-Ms';

/** Copies NATS headers into plain data. */
export function fromMsgHdrs(hdrs: MsgHdrs | undefined): Record<string, string[]> {
  const out: Record<string, string[]> = {};
  if (hdrs === undefined) return out;
  for (const [name, values] of hdrs) out[name] = [...values];
  return out;
}

/** Builds NATS headers from plain data (one value per name, or several). */
export function toMsgHdrs(plain: Readonly<Record<string, string | readonly string[]>> | undefined): MsgHdrs {
  const hdrs = natsHeaders();
  for (const [name, value] of Object.entries(plain ?? {})) {
    for (const one of typeof value === 'string' ? [value] : value) hdrs.append(name, one);
  }
  return hdrs;
}
