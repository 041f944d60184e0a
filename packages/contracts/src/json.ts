import { MAX_JSON_DEPTH } from './limits.js';

type Frame = { readonly value: unknown; readonly path: string; readonly depth: number } | { readonly leave: object };

/**
 * Says why `value` is not plain JSON, or returns `undefined` when it is: only null, booleans, finite numbers,
 * strings, arrays without holes or `undefined`, and plain objects, nested at most `maxDepth` deep. An object
 * property whose value is `undefined` means "absent", as in JSON.stringify, so optional fields need no scrubbing.
 */
export function jsonProblem(value: unknown, maxDepth: number = MAX_JSON_DEPTH): string | undefined {
  // An explicit stack instead of recursion: hostile input must not be able to exhaust the call stack.
  const stack: Frame[] = [{ value, path: '$', depth: 0 }];
  const ancestors = new Set<object>();
  for (let frame = stack.pop(); frame !== undefined; frame = stack.pop()) {
    if ('leave' in frame) {
      ancestors.delete(frame.leave);
      continue;
    }
    const { value: current, path, depth } = frame;
    if (current === null || typeof current === 'string' || typeof current === 'boolean') continue;
    if (typeof current === 'number') {
      if (!Number.isFinite(current)) return `${path} is ${String(current)}, which JSON cannot represent`;
      continue;
    }
    if (typeof current !== 'object') return `${path} is a ${typeof current}, which JSON cannot represent`;
    if (ancestors.has(current)) return `${path} is a circular reference`;
    if (depth >= maxDepth) return `${path} nests deeper than ${maxDepth} levels`;
    ancestors.add(current);
    stack.push({ leave: current });
    if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) {
        if (!(i in current) || current[i] === undefined) return `${path}[${i}] is undefined, which JSON cannot represent`;
        stack.push({ value: current[i], path: `${path}[${i}]`, depth: depth + 1 });
      }
      continue;
    }
    const prototype = Object.getPrototypeOf(current) as unknown;
    if (prototype !== Object.prototype && prototype !== null) return `${path} is not a plain object`;
    for (const [key, child] of Object.entries(current)) {
      if (child !== undefined) stack.push({ value: child, path: `${path}.${key}`, depth: depth + 1 });
    }
  }
  return undefined;
}
