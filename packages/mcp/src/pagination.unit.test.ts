import { hasErrorCode } from '@toolplane/contracts';
import { describe, expect, it } from 'vitest';
import { collectPages, type Page } from './pagination.js';

function pages(...all: Page<number>[]) {
  const cursors: (string | undefined)[] = [];
  const fetchPage = (cursor: string | undefined) => {
    cursors.push(cursor);
    const index = cursor === undefined ? 0 : Number(cursor);
    return Promise.resolve(all[index]!);
  };
  return { fetchPage, cursors };
}

describe('collectPages', () => {
  it('follows nextCursor to the end', async () => {
    const { fetchPage, cursors } = pages({ items: [1, 2], nextCursor: '1' }, { items: [3], nextCursor: '2' }, { items: [4] });
    expect(await collectPages('numbers', {}, fetchPage)).toEqual([1, 2, 3, 4]);
    expect(cursors).toEqual([undefined, '1', '2']);
  });

  it('reads an empty cursor as the end', async () => {
    const { fetchPage } = pages({ items: [1], nextCursor: '' });
    expect(await collectPages('numbers', {}, fetchPage)).toEqual([1]);
  });

  it('refuses more items than the bound instead of truncating', async () => {
    const { fetchPage } = pages({ items: [1, 2], nextCursor: '1' }, { items: [3, 4] });
    const error: unknown = await collectPages('numbers', { maxItems: 3 }, fetchPage).catch((e: unknown) => e);
    expect(hasErrorCode(error) && error.code).toBe('INVALID_ARGUMENT');
  });

  it('refuses more pages than the bound', async () => {
    const { fetchPage } = pages({ items: [1], nextCursor: '1' }, { items: [2], nextCursor: '2' }, { items: [3] });
    await expect(collectPages('numbers', { maxPages: 2 }, fetchPage)).rejects.toMatchObject({ code: 'INVALID_ARGUMENT' });
    expect(await collectPages('numbers', { maxPages: 3 }, fetchPage)).toEqual([1, 2, 3]);
  });

  it('stops a server that repeats a cursor', async () => {
    const { fetchPage } = pages({ items: [1], nextCursor: '1' }, { items: [2], nextCursor: '1' });
    await expect(collectPages('numbers', {}, fetchPage)).rejects.toMatchObject({ code: 'TEMPORARY_UNAVAILABLE', details: { providerErrorType: 'PaginationLoop' } });
  });
});
