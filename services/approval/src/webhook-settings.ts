import { inspect } from 'node:util';
import { z } from 'zod';
import { TenantId, WorkspaceId } from '@toolplane/contracts';

/**
 * A webhook's signing secret. The value is reachable only through `reveal()`: printing, logging or JSON-dumping the
 * parsed configuration shows `[redacted]`, because a logger's path redaction does not reach a secret nested in a
 * per-tenant map.
 */
export class WebhookSecret {
  readonly #value: string;

  constructor(value: string) {
    this.#value = value;
  }

  /** The secret itself, for computing a signature and nothing else. */
  reveal(): string {
    return this.#value;
  }

  toJSON(): string {
    return '[redacted]';
  }

  toString(): string {
    return '[redacted]';
  }

  [inspect.custom](): string {
    return '[redacted]';
  }
}

/** The shortest secret accepted: 32 characters, so an HMAC key is not guessable. */
export const minWebhookSecretLength = 32;

function parsedUrl(value: string): URL | undefined {
  try {
    return new URL(value);
  } catch {
    return undefined;
  }
}

const httpUrl = () =>
  z
    .string({ error: 'must be a string' })
    .max(2048, 'must be at most 2048 characters')
    .superRefine((value, ctx) => {
      const url = parsedUrl(value);
      if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) ctx.addIssue({ code: 'custom', message: 'must be an http:// or https:// URL' });
      // fetch refuses a URL with user info, and a password there would be a secret outside `secret`.
      else if (url.username !== '' || url.password !== '') ctx.addIssue({ code: 'custom', message: 'must not carry a user name or password' });
    });

/** One tenant's webhook: where to POST, the HMAC secret, and optionally which workspaces' approvals to send. */
export const WebhookTarget = z.strictObject({
  url: httpUrl(),
  secret: z
    .string({ error: 'must be a string' })
    .min(minWebhookSecretLength, `must be at least ${minWebhookSecretLength} characters`)
    .max(1024, 'must be at most 1024 characters')
    .transform((value) => new WebhookSecret(value)),
  /** Only these workspaces' approvals are sent; absent: every workspace of the tenant. */
  workspaces: z.array(WorkspaceId, { error: 'must be an array of workspace ids' }).min(1, 'must name at least one workspace').max(1000).optional(),
});
export type WebhookTarget = z.output<typeof WebhookTarget>;

/** Per tenant, its webhook. */
export type ApprovalWebhooks = Readonly<Record<string, WebhookTarget>>;

const Webhooks = z.record(TenantId, WebhookTarget);

function issuePath(issue: z.core.$ZodIssue): string {
  return issue.path.map((part, i) => (typeof part === 'number' ? `[${part}]` : i === 0 ? String(part) : `.${String(part)}`)).join('');
}

/**
 * APPROVAL_WEBHOOKS: JSON `{"<tenant>": {"url": "https://…", "secret": "<at least 32 characters>", "workspaces"?: […]}}`,
 * default `{}` (no webhooks). Every failure is one issue without a path and never quotes a value, so the start-up
 * error is one line naming the setting and the place, without the secret.
 */
export const ApprovalWebhooksSetting = z
  .string({ error: 'must be a string' })
  .default('{}')
  .transform((text, ctx): ApprovalWebhooks => {
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      ctx.addIssue({ code: 'custom', message: 'is not valid JSON (expected {"<tenant>": {"url": "https://…", "secret": "…", "workspaces"?: […]}})' });
      return z.NEVER;
    }
    const parsed = Webhooks.safeParse(value);
    if (!parsed.success) {
      const first = parsed.error.issues[0];
      // zod's own messages for unknown keys and wrong types name keys and types, never the values.
      ctx.addIssue({ code: 'custom', message: `is not a valid webhook map: ${first ? `${issuePath(first) || 'the document'}: ${first.message}` : 'invalid'}` });
      return z.NEVER;
    }
    return parsed.data;
  });

/** CONSOLE_PUBLIC_URL: the console's address as its users reach it (no trailing slash kept). */
export const consolePublicUrlSetting = httpUrl()
  // Room for `/w/<workspace>/approvals#approval-<uuid>` within the notification's 2048-character consoleUrl.
  .refine((value) => value.length <= 1900, { error: 'must be at most 1900 characters' })
  .transform((value) => value.replace(/\/+$/, ''));
