import { z } from 'zod';
import { SandboxKind } from './classification.js';
import { ExternalId, IsoDateTime, PrincipalId, Sha256Hex, Uuid } from './primitives.js';

// The sandbox profile of a stdio MCP server: part of its registration (and of the registration's fingerprint, so
// changing it is a governed change: retire and register again), applied by the MCP adapter when it spawns the
// server under bubblewrap. The limits are kernel rlimits of the server's processes, enforced inside the sandbox.

/**
 * How a sandboxed server reaches the network: `none` (its own network namespace with only loopback), `host` (the
 * host's network; recorded with the operator who registered it), `egress` (only declared host:port pairs; refused
 * at registration for now).
 */
export const SandboxNetworkMode = z.enum(['none', 'host', 'egress']);
export type SandboxNetworkMode = z.infer<typeof SandboxNetworkMode>;

/** An absolute, normalised path (no `.` or `..` segments, no doubled or trailing slash), never `/` itself. */
export const SandboxPath = z
  .string()
  .min(2)
  .max(1024)
  .regex(/^(\/[^/\0]+)+$/, 'must be an absolute path without a trailing slash')
  .refine((value) => !value.split('/').some((segment) => segment === '.' || segment === '..'), 'must not contain . or .. segments');
export type SandboxPath = z.infer<typeof SandboxPath>;

/** One host:port a server with `egress` network may reach. */
export const SandboxEgressRule = z.strictObject({
  host: z.string().min(1).max(253).regex(/^[A-Za-z0-9.-]+$/, 'must be a host name or an IPv4 address'),
  port: z.number().int().min(1).max(65_535),
});
export type SandboxEgressRule = z.infer<typeof SandboxEgressRule>;

/** The defaults of every limit: generous enough for a Node server (server-everything, server-memory), finite. */
export const SANDBOX_LIMIT_DEFAULTS = {
  /** RLIMIT_CPU, summed over the session's life (a pooled session is reopened when its server dies of it). */
  cpuSeconds: 3_600,
  /** RLIMIT_AS. Node reserves about 1.5 GiB of address space at start (V8's code range and heap cages), so less fails it. */
  addressSpaceBytes: 4 * 1024 ** 3,
  /** RLIMIT_NOFILE. */
  openFiles: 1_024,
  /** RLIMIT_NPROC: processes and threads of the sandbox (Node alone runs about a dozen threads). */
  processes: 128,
  /** RLIMIT_FSIZE: the largest file the server may write. */
  fileSizeBytes: 256 * 1024 ** 2,
  /** The size of the private /tmp (a tmpfs, so it is memory). */
  tmpBytes: 64 * 1024 ** 2,
} as const;

/** Resource limits of a sandboxed server; each one absent takes its default. */
export const SandboxLimits = z.strictObject({
  cpuSeconds: z.number().int().min(1).max(1_000_000).default(SANDBOX_LIMIT_DEFAULTS.cpuSeconds),
  addressSpaceBytes: z
    .number()
    .int()
    .min(64 * 1024 ** 2)
    .max(2 ** 50)
    .default(SANDBOX_LIMIT_DEFAULTS.addressSpaceBytes),
  openFiles: z.number().int().min(16).max(1_048_576).default(SANDBOX_LIMIT_DEFAULTS.openFiles),
  processes: z.number().int().min(1).max(65_536).default(SANDBOX_LIMIT_DEFAULTS.processes),
  fileSizeBytes: z
    .number()
    .int()
    .min(1)
    .max(2 ** 50)
    .default(SANDBOX_LIMIT_DEFAULTS.fileSizeBytes),
  tmpBytes: z
    .number()
    .int()
    .min(1024 * 1024)
    .max(2 ** 40)
    .default(SANDBOX_LIMIT_DEFAULTS.tmpBytes),
});
export type SandboxLimits = z.infer<typeof SandboxLimits>;

const profileFields = {
  /** A label for receipts and events (`default` unless the operator names it). */
  name: ExternalId.default('default'),
  network: SandboxNetworkMode.default('none'),
  /** With network `egress`: the only host:port pairs reachable. */
  egress: z.array(SandboxEgressRule).max(64).optional(),
  /** Host paths the server may read (bound read-only at the same path), besides its runtime and its command's package. */
  readOnlyMounts: z.array(SandboxPath).max(32).default([]),
  /** Host paths the server may write (bound read-write at the same path): its data, e.g. server-memory's directory. */
  writablePaths: z.array(SandboxPath).max(16).default([]),
  limits: SandboxLimits.default(SandboxLimits.parse({})),
};

/** The profile a stdio server is registered with (the operator's request). */
export const SandboxProfileRequest = z.strictObject(profileFields).superRefine((profile, ctx) => {
  if (profile.network === 'egress') {
    // An allow-listing proxy is not built yet: refusing beats silently granting the host network or none at all.
    ctx.addIssue({ code: 'custom', path: ['network'], message: 'network egress (an allow-list of host:port) is not supported yet: register with network none, or host' });
  }
  if (profile.network !== 'egress' && profile.egress !== undefined) ctx.addIssue({ code: 'custom', path: ['egress'], message: 'egress rules apply to network egress only' });
});
export type SandboxProfileRequest = z.infer<typeof SandboxProfileRequest>;

/**
 * The sandbox profile of a registered stdio server. A `host` network is only ever there because an operator
 * registered it so: who and when are recorded with it.
 */
export const SandboxProfile = z
  .strictObject({
    ...profileFields,
    networkHostApprovedBy: PrincipalId.optional(),
    networkHostApprovedAt: IsoDateTime.optional(),
  })
  .superRefine((profile, ctx) => {
    if (profile.network === 'host' && (profile.networkHostApprovedBy === undefined || profile.networkHostApprovedAt === undefined)) {
      ctx.addIssue({ code: 'custom', path: ['networkHostApprovedBy'], message: 'a host network is recorded with the operator who approved it' });
    }
  });
export type SandboxProfile = z.infer<typeof SandboxProfile>;

/** The profile of a stdio server registered without one: no network, no mounts, the default limits. */
export const DEFAULT_SANDBOX_PROFILE: SandboxProfile = SandboxProfile.parse({});

/**
 * What a call's SANDBOX stage leased, as receipts and events record it: which sandbox (the session's, by a hash of
 * its profile), its profile's name, network mode and limits. Never paths' contents, env or secrets.
 */
export const SandboxLeaseInfo = z.strictObject({
  profileName: ExternalId,
  /** SHA-256 of the canonical profile: equal for every call served by sandboxes of the same profile. */
  profileHash: Sha256Hex,
  network: SandboxNetworkMode,
  limits: SandboxLimits,
});
export type SandboxLeaseInfo = z.infer<typeof SandboxLeaseInfo>;

/** A call's sandbox lease as its invocation and receipt record it. */
export const SandboxLeaseRecord = z.strictObject({
  sandboxLeaseId: Uuid,
  sandboxKind: SandboxKind,
  ...SandboxLeaseInfo.shape,
});
export type SandboxLeaseRecord = z.infer<typeof SandboxLeaseRecord>;
