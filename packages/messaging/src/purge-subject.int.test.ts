import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { z } from 'zod';
import { testScope } from '@toolplane/testing';
import { connectMessaging } from './connect.js';
import { ensureStream } from './ensure-stream.js';
import type { Messaging } from './messaging.js';
import { purgeSubject } from './purge-subject.js';
import { appendToSubject, readSubject } from './subject-log.js';

const scope = testScope('purge_subject');
const stream = `${scope.prefix}_PURGE`.toUpperCase();
const subject = (id: string) => `${scope.prefix}.log.${id}`;
let m: Messaging;

beforeAll(async () => {
  m = await connectMessaging({ url: scope.natsUrl, name: `${scope.prefix}_purge` });
  await ensureStream(m, { name: stream, subjects: [`${scope.prefix}.log.>`], retention: 'limits', storage: 'file', allowDirect: true });
});
afterAll(async () => {
  await m.drain();
});

describe('purgeSubject', () => {
  it("keeps a subject's last message (and its sequence), removes the earlier ones, and leaves other subjects alone", async () => {
    let last = 0;
    for (const n of [1, 2, 3]) last = (await appendToSubject(m, { subject: subject('a'), schema: z.number(), message: n, expectedLastSequence: last, msgId: `a-${n}` })).seq;
    await appendToSubject(m, { subject: subject('b'), schema: z.number(), message: 9, expectedLastSequence: 0, msgId: 'b-1' });
    expect(await purgeSubject(m, stream, subject('a'))).toBe(2);
    expect(await readSubject(m, { stream, subject: subject('a'), schema: z.number() })).toEqual({ entries: [{ seq: last, value: 3 }], lastSequence: last });
    expect((await readSubject(m, { stream, subject: subject('b'), schema: z.number() })).entries.map((entry) => entry.value)).toEqual([9]);
    expect(await purgeSubject(m, stream, subject('a'))).toBe(0);
  });
});
