/** A bounded map that forgets its least recently used entry when full; `onEvict` hears of every entry it drops. */
export class LruCache<K, V> {
  readonly #entries = new Map<K, V>();
  readonly #capacity: number;
  readonly #onEvict: ((key: K, value: V) => void) | undefined;

  constructor(capacity: number, onEvict?: (key: K, value: V) => void) {
    if (!Number.isInteger(capacity) || capacity < 1) throw new RangeError('an LRU cache holds at least one entry');
    this.#capacity = capacity;
    this.#onEvict = onEvict;
  }

  /** The number of entries held. */
  get size(): number {
    return this.#entries.size;
  }

  /** The value for `key`, which becomes the most recently used; undefined when absent. */
  get(key: K): V | undefined {
    if (!this.#entries.has(key)) return undefined;
    const value = this.#entries.get(key) as V;
    // A Map iterates in insertion order: re-inserting moves the entry to the most recent end.
    this.#entries.delete(key);
    this.#entries.set(key, value);
    return value;
  }

  /** Stores `value` as the most recently used entry, evicting the least recently used one when over capacity. */
  set(key: K, value: V): void {
    const previous = this.#entries.get(key);
    if (this.#entries.delete(key) && previous !== value) this.#onEvict?.(key, previous as V);
    this.#entries.set(key, value);
    while (this.#entries.size > this.#capacity) {
      const oldest = this.#entries.keys().next();
      if (oldest.done === true) break;
      const evicted = this.#entries.get(oldest.value) as V;
      this.#entries.delete(oldest.value);
      this.#onEvict?.(oldest.value, evicted);
    }
  }
}
