import { describe, expect, it } from 'vitest';
import { cpuMsPerCall, processCpuMs, sampleCpu } from './metrics.js';

describe('cpuMsPerCall', () => {
  it('divides what each process spent between the samples by the calls, with the total', () => {
    expect(cpuMsPerCall({ adapter: 100, bench: 50 }, { adapter: 300, bench: 70, tool: 10 }, 100)).toEqual({ adapter: 2, bench: 0.2, tool: 0.1, total: 2.3 });
  });

  it('gives totals when no call ended', () => {
    expect(cpuMsPerCall({ adapter: 0 }, { adapter: 5 }, 0)).toEqual({ adapter: 5, total: 5 });
  });
});

describe('sampleCpu', () => {
  it('reads the CPU time of the processes it knows and leaves out the others', async () => {
    const sample = await sampleCpu({ self: process.pid, unknown: undefined, gone: 2 ** 22 + 12_345 });
    expect(Object.keys(sample)).toEqual(['self']);
    expect(sample['self']).toBeGreaterThan(0);
    expect(await processCpuMs(process.pid)).toBeGreaterThanOrEqual(sample['self'] ?? Infinity);
  });
});
