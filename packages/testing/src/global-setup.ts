// Vitest global setup: gives every test file of a workspace real NATS (JetStream) and MongoDB-protocol
// endpoints. In order of preference: NATS_URL/MONGODB_URL from the environment; containers via testcontainers
// when a Docker engine is reachable; otherwise the project's local nats-server and FerretDB binaries
// (infra/local), started on free ports with throw-away data and stopped afterwards.
import type { TestProject } from 'vitest/node';
import { startInfra } from './infra.js';

export async function setup(project: TestProject): Promise<() => Promise<void>> {
  const infra = await startInfra(process.env);
  project.provide('natsUrl', infra.natsUrl);
  project.provide('mongoUrl', infra.mongoUrl);
  project.provide('infraKind', infra.kind);
  return infra.stop;
}
