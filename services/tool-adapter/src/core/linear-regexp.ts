import { DEFAULT_MAX_PATTERN_LENGTH, compileLinearRegExp, type LinearRegExpOptions, type LinearRegExpResult } from '@toolplane/contracts';

// Compiling (RE2, linear time) lives in @toolplane/contracts, so the registry validates a pattern with the very
// engine and options the adapter runs it with; this module adds the adapter's cache of compiled patterns.

export { COMMAND_PATTERN_OPTIONS, DEFAULT_MAX_PATTERN_LENGTH, compileCommandPattern, compileLinearRegExp } from '@toolplane/contracts';
export type { LinearRegExp, LinearRegExpOptions, LinearRegExpResult } from '@toolplane/contracts';

/** Remembers compiled patterns (and refusals) by source and flags, so hot policies are compiled once. */
export class LinearRegExpCache {
  readonly #entries = new Map<string, LinearRegExpResult>();
  readonly #capacity: number;

  constructor(capacity = 2048) {
    this.#capacity = capacity;
  }

  /** The compiled pattern for `source`, compiling it on first use. */
  compile(source: string, options: LinearRegExpOptions = {}): LinearRegExpResult {
    const key = `${options.caseInsensitive === true ? 'i' : '-'}${options.maxLength ?? DEFAULT_MAX_PATTERN_LENGTH}:${source}`;
    let result = this.#entries.get(key);
    if (result === undefined) {
      result = compileLinearRegExp(source, options);
      // Dropping everything when full is crude but bounded, and policies rarely hold thousands of patterns.
      if (this.#entries.size >= this.#capacity) this.#entries.clear();
      this.#entries.set(key, result);
    }
    return result;
  }
}
