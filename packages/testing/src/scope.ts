import { randomBytes } from 'node:crypto';
import { inject } from 'vitest';
import type { InfraKind } from './infra.js';

declare module 'vitest' {
  export interface ProvidedContext {
    natsUrl: string;
    mongoUrl: string;
    infraKind: InfraKind;
  }
}

/** A name no other test file (or earlier run) uses: for databases, streams, consumers and subjects. */
export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`.replace(/[^A-Za-z0-9_]/g, '_');
}

/** The real servers and the isolated names one test file works with. */
export interface TestScope {
  readonly natsUrl: string;
  readonly mongoUrl: string;
  /** A database name of this file's own. */
  readonly dbName: string;
  /** A prefix for this file's streams, consumers and subjects. */
  readonly prefix: string;
}

/** Endpoints from the global setup plus a database name and stream prefix unique to the calling test file. */
export function testScope(label: string): TestScope {
  return { natsUrl: inject('natsUrl'), mongoUrl: inject('mongoUrl'), dbName: uniqueName(`t_${label}`), prefix: uniqueName(label.toUpperCase()) };
}
