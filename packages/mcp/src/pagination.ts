import { ToolplaneError } from '@toolplane/contracts';

/** Bounds on one paginated listing. */
export interface PageLimits {
  /** The most pages fetched (default 100). */
  readonly maxPages?: number | undefined;
  /** The most items accepted in total (default 1,000). */
  readonly maxItems?: number | undefined;
}

/** One page as a server returns it. */
export interface Page<T> {
  readonly items: readonly T[];
  readonly nextCursor?: string | undefined;
}

/** Default bounds of a listing. */
export const DEFAULT_PAGE_LIMITS = { maxPages: 100, maxItems: 1000 } as const;

/**
 * Follows `nextCursor` to the end. Exceeding a bound is an error rather than a silent truncation: a caller that
 * compared a truncated list with a stored one would take the missing items for removed ones. A cursor seen
 * twice is a server looping, also an error.
 */
export async function collectPages<T>(what: string, limits: PageLimits, fetchPage: (cursor: string | undefined) => Promise<Page<T>>): Promise<T[]> {
  const maxPages = limits.maxPages ?? DEFAULT_PAGE_LIMITS.maxPages;
  const maxItems = limits.maxItems ?? DEFAULT_PAGE_LIMITS.maxItems;
  const items: T[] = [];
  const seen = new Set<string>();
  let cursor: string | undefined;
  for (let pages = 1; ; pages++) {
    const page = await fetchPage(cursor);
    items.push(...page.items);
    if (items.length > maxItems) {
      throw new ToolplaneError('INVALID_ARGUMENT', `the server lists more than ${maxItems} ${what}`, { details: { providerErrorType: 'TooManyItems', maxItems } });
    }
    // An empty cursor is read as "no more pages", as some servers send it.
    if (page.nextCursor === undefined || page.nextCursor === '') return items;
    if (seen.has(page.nextCursor)) {
      throw new ToolplaneError('TEMPORARY_UNAVAILABLE', `the server repeated a pagination cursor while listing ${what}`, { details: { providerErrorType: 'PaginationLoop' } });
    }
    if (pages >= maxPages) {
      throw new ToolplaneError('INVALID_ARGUMENT', `the server lists ${what} over more than ${maxPages} pages`, { details: { providerErrorType: 'TooManyPages', maxPages } });
    }
    seen.add(page.nextCursor);
    cursor = page.nextCursor;
  }
}
