import { createHash } from 'node:crypto';
import { decideRate, isIdle, type RateWindowConfig, type RateWindowState } from '../core/rate-window.js';

// The endpoint's own per-token limit, counted per replica: with N replicas behind one URL a token gets up to N times
// the limit. It protects the endpoint (and the NATS traffic it would make) from one runaway client; the exact,
// distributed limits are the tenant policy's, applied to every call in the pipeline. Tokens are keyed by their
// SHA-256, so no token is ever held in the map (or reaches a log through it).

export interface TokenRateLimitsOptions extends Omit<RateWindowConfig, 'slices'> {
  /** Keys kept at most; past it idle keys go first, then the least recently seen. */
  readonly maxKeys: number;
  readonly now?: () => number;
}

/** What a request of a token may do now. */
export type TokenAdmission = { readonly admitted: true } | { readonly admitted: false; readonly retryAfterMs: number };

/** Slices per window: a refusal ends at most a tenth of the window later than an exact log would let it. */
const SLICES = 10;

/** Per-token admission on this replica. */
export class TokenRateLimits {
  readonly #config: RateWindowConfig;
  readonly #maxKeys: number;
  readonly #now: () => number;
  /** key → state, in least-recently-seen order (a seen key is moved to the end). */
  readonly #states = new Map<string, RateWindowState>();

  constructor(options: TokenRateLimitsOptions) {
    this.#config = { limit: options.limit, windowMs: options.windowMs, slices: SLICES };
    this.#maxKeys = options.maxKeys;
    this.#now = options.now ?? (() => performance.timeOrigin + performance.now());
  }

  get size(): number {
    return this.#states.size;
  }

  /** Counts a request of `token` when admitted. */
  admit(token: string): TokenAdmission {
    const key = createHash('sha256').update(token).digest('base64url');
    const now = this.#now();
    const decision = decideRate(this.#states.get(key), now, this.#config);
    this.#states.delete(key);
    this.#states.set(key, decision.state);
    if (this.#states.size > this.#maxKeys) this.#evict(now);
    return decision.admitted ? { admitted: true } : { admitted: false, retryAfterMs: decision.retryAfterMs };
  }

  /** Forgets idle keys (they would be admitted anew anyway), then the least recently seen until under the bound. */
  #evict(now: number): void {
    for (const [key, state] of this.#states) if (isIdle(state, now, this.#config)) this.#states.delete(key);
    for (const key of this.#states.keys()) {
      if (this.#states.size <= this.#maxKeys) break;
      this.#states.delete(key);
    }
  }
}
