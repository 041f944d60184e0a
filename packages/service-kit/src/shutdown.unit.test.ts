import { describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { ShutdownStack } from './shutdown.js';

const silent = pino({ level: 'silent' });

describe('ShutdownStack', () => {
  it('runs steps last-registered first', async () => {
    const order: string[] = [];
    const stack = new ShutdownStack(silent);
    for (const name of ['mongodb', 'nats', 'consumers']) stack.push(name, () => Promise.resolve(void order.push(name)));
    expect(await stack.run(1_000)).toBe(true);
    expect(order).toEqual(['consumers', 'nats', 'mongodb']);
  });

  it('keeps going past a failing or stuck step and reports it unclean', async () => {
    const order: string[] = [];
    const stack = new ShutdownStack(silent);
    stack.push('last', () => Promise.resolve(void order.push('last')));
    stack.push('stuck', () => new Promise<void>(() => {}));
    stack.push('failing', () => Promise.reject(new Error('boom')));
    const started = Date.now();
    expect(await stack.run(200)).toBe(false);
    expect(Date.now() - started).toBeLessThan(1_000);
    expect(order).toEqual(['last']);
  });
});
