// Tool globs (contracts' ToolPattern): `*` inside a segment matches any run of segment characters, a whole `**`
// segment matches any number of segments. Matched by hand, in time bounded by the product of the (short) lengths,
// so no pattern can make matching slow.

/** Whether a `*`-glob matches one segment (no dots on either side). */
function segmentMatches(glob: string, segment: string): boolean {
  let g = 0;
  let s = 0;
  let starAt = -1;
  let resumeAt = 0;
  while (s < segment.length) {
    if (g < glob.length && glob[g] !== '*' && glob[g] === segment[s]) {
      g++;
      s++;
    } else if (g < glob.length && glob[g] === '*') {
      starAt = g++;
      resumeAt = s;
    } else if (starAt >= 0) {
      g = starAt + 1;
      s = ++resumeAt;
    } else {
      return false;
    }
  }
  while (g < glob.length && glob[g] === '*') g++;
  return g === glob.length;
}

/** Whether `pattern` (a tool id or glob) matches `toolId`. */
export function toolPatternMatches(pattern: string, toolId: string): boolean {
  const globs = pattern.split('.');
  const segments = toolId.split('.');
  // matches[i][j]: globs from i on match segments from j on.
  const matches: boolean[][] = Array.from({ length: globs.length + 1 }, () => new Array<boolean>(segments.length + 1).fill(false));
  (matches[globs.length] as boolean[])[segments.length] = true;
  for (let i = globs.length - 1; i >= 0; i--) {
    const glob = globs[i] as string;
    const row = matches[i] as boolean[];
    const next = matches[i + 1] as boolean[];
    for (let j = segments.length; j >= 0; j--) {
      if (glob === '**') {
        row[j] = (next[j] as boolean) || (j < segments.length && (row[j + 1] as boolean));
      } else {
        row[j] = j < segments.length && segmentMatches(glob, segments[j] as string) && (next[j + 1] as boolean);
      }
    }
  }
  return (matches[0] as boolean[])[0] as boolean;
}

/** The first of `patterns` that matches `toolId`, if any. */
export function firstMatchingToolPattern(patterns: readonly string[], toolId: string): string | undefined {
  return patterns.find((pattern) => toolPatternMatches(pattern, toolId));
}
