import { ToolplaneError } from '@toolplane/contracts';

/** Why a key cannot be stored. */
export type UnstorableReason = 'starts-with-dollar' | 'contains-dot' | 'contains-nul' | 'circular';

/** The first key (depth first) that MongoDB and FerretDB would not both store as a plain field. */
export interface UnstorableKey {
  /** Where the key is, e.g. `document.inputSchema.properties["$ref"]`. */
  readonly path: string;
  readonly key: string;
  readonly reason: UnstorableReason;
}

const explanations: Readonly<Record<UnstorableReason, string>> = {
  'starts-with-dollar': 'starts with "$"',
  'contains-dot': 'contains "."',
  'contains-nul': 'contains a NUL character',
  circular: 'refers back to one of its ancestors',
};

/**
 * Finds a key that must not be stored: `$`-prefixed and dotted field names are operators and paths to
 * FerretDB (it refuses them) and ambiguous in MongoDB queries even where MongoDB accepts them.
 */
export function findUnstorableKey(value: unknown, root = 'document'): UnstorableKey | undefined {
  return walk(value, root, new Set());
}

/**
 * Throws INVALID_ARGUMENT naming the path of the first `$`-prefixed or dotted key in `value` (nested objects and
 * arrays included). Free-form JSON such as a JSON Schema belongs in a string: see encodeFreeJson.
 */
export function assertStorable(value: unknown, root = 'document'): void {
  const found = findUnstorableKey(value, root);
  if (found) {
    throw new ToolplaneError('INVALID_ARGUMENT', `cannot store ${found.path}: the key ${explanations[found.reason]} (store free-form JSON as a string)`, {
      details: { path: found.path, key: found.key, reason: found.reason },
    });
  }
}

function walk(value: unknown, path: string, ancestors: Set<object>): UnstorableKey | undefined {
  if (!isDocumentLike(value)) return undefined;
  if (ancestors.has(value)) return { path, key: '', reason: 'circular' };
  ancestors.add(value);
  try {
    if (Array.isArray(value)) {
      for (const [index, item] of value.entries()) {
        const found = walk(item, `${path}[${index}]`, ancestors);
        if (found) return found;
      }
      return undefined;
    }
    // BSON serializes a Map like an object, keys and all.
    const entries: Iterable<[unknown, unknown]> = value instanceof Map ? value.entries() : Object.entries(value);
    for (const [rawKey, item] of entries) {
      const key = String(rawKey);
      const keyPath = `${path}${segment(key)}`;
      const reason = keyProblem(key);
      if (reason) return { path: keyPath, key, reason };
      const found = walk(item, keyPath, ancestors);
      if (found) return found;
    }
    return undefined;
  } finally {
    ancestors.delete(value);
  }
}

function keyProblem(key: string): UnstorableReason | undefined {
  if (key.startsWith('$')) return 'starts-with-dollar';
  if (key.includes('.')) return 'contains-dot';
  if (key.includes('\0')) return 'contains-nul';
  return undefined;
}

// Objects BSON writes field by field; BSON values (ObjectId, Long, Binary, …), dates, regexps and binary data are leaves.
function isDocumentLike(value: unknown): value is object {
  if (typeof value !== 'object' || value === null) return false;
  if ('_bsontype' in value) return false;
  return !(value instanceof Date || value instanceof RegExp || ArrayBuffer.isView(value) || value instanceof ArrayBuffer);
}

function segment(key: string): string {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`;
}
