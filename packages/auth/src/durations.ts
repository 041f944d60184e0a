import { ToolplaneError } from '@toolplane/contracts';

const unitSeconds = { s: 1, m: 60, h: 3600, d: 86_400 } as const;

/** A token lifetime in whole seconds: a positive number of seconds, or `30s`, `15m`, `8h`, `7d`. */
export type Lifetime = number | `${number}${keyof typeof unitSeconds}`;

/** Turns a lifetime into seconds; INVALID_ARGUMENT for anything that is not a positive whole duration. */
export function lifetimeSeconds(lifetime: Lifetime): number {
  if (typeof lifetime === 'number') {
    if (Number.isSafeInteger(lifetime) && lifetime > 0) return lifetime;
  } else {
    const match = /^(\d{1,9})([smhd])$/.exec(lifetime);
    const amount = Number(match?.[1]);
    const unit = match?.[2] as keyof typeof unitSeconds | undefined;
    if (unit !== undefined && amount > 0) return amount * unitSeconds[unit];
  }
  throw new ToolplaneError('INVALID_ARGUMENT', `expiresIn must be a positive whole number of seconds or like 15m, 8h, 7d (got ${JSON.stringify(lifetime)})`);
}
