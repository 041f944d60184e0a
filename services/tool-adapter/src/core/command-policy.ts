import type { ToolDescriptor } from '@toolplane/contracts';
import { COMMAND_PATTERN_OPTIONS, LinearRegExpCache, type LinearRegExp } from './linear-regexp.js';

// Shell-like tools carry allow and block patterns over the command line they are asked to run. Patterns are
// regular-expression sources matched case-insensitively, unanchored and in linear time (RE2), against the command
// with whitespace collapsed; block patterns are also matched with shell quoting removed (`r''m -"rf"` is rm -rf).
// An allow list, when present, must match every command of a chain (`a; b`, `a && b`, `a | b`, `$(b)`).

/**
 * A starting block list for tenant policies: recursive deletion, dropping databases, destroying infrastructure.
 * Each is a regular-expression source, matched case-insensitively.
 */
export const DEFAULT_BLOCKED_COMMAND_PATTERNS: readonly string[] = [
  // rm with a recursive flag anywhere among its arguments: rm -rf, rm -fr, rm -r -f, rm -R, rm --recursive.
  String.raw`\brm\s+(?:\S+\s+)*-(?:[a-z]*r|-recursive\b)`,
  String.raw`\bdrop\s+(?:database|schema)\b`,
  String.raw`\bdrop\s+table\b`,
  String.raw`\btruncate\s+table\b`,
  String.raw`\bterraform\s+(?:\S+\s+)*destroy\b`,
  String.raw`\bterraform\s+(?:\S+\s+)*apply\s+(?:\S+\s+)*-destroy\b`,
  String.raw`\bkubectl\s+(?:\S+\s+)*delete\s+(?:\S+\s+)*(?:ns|namespaces?)\b`,
  String.raw`\baz\s+group\s+delete\b`,
  String.raw`\bgcloud\s+projects\s+delete\b`,
  String.raw`\baws\s+s3\s+rb\b`,
  String.raw`\bmkfs(?:\.\w+)?\b`,
  String.raw`\bdd\s+(?:\S+\s+)*of=/dev/`,
  String.raw`\bgit\s+push\s+(?:\S+\s+)*(?:--force\b|-f\b)`,
];

/** What the command rules say about one call. */
export type CommandVerdict =
  | { readonly kind: 'not_applicable' }
  | { readonly kind: 'allowed' }
  | { readonly kind: 'blocked'; readonly pattern: string; readonly by: 'descriptor' | 'tenant-policy' }
  | { readonly kind: 'not_allowed'; readonly segment: number }
  | { readonly kind: 'unreadable'; readonly problem: string }
  | { readonly kind: 'invalid_pattern'; readonly pattern: string; readonly problem: string };

/** The largest command line examined; a longer one is refused as unreadable rather than partly checked. */
export const MAX_COMMAND_LENGTH = 65_536;

/** The command line a call asks for: the descriptor's command argument as a string, or an argv array joined by spaces. */
export function commandOf(argument: string, args: Readonly<Record<string, unknown>>): { command: string } | { problem: string } {
  const value = Object.hasOwn(args, argument) ? args[argument] : undefined;
  let command: string;
  if (typeof value === 'string') command = value;
  else if (Array.isArray(value) && value.every((part) => typeof part === 'string')) command = value.join(' ');
  else return { problem: `the command argument ${JSON.stringify(argument)} is missing or is neither a string nor an array of strings` };
  if (command.length > MAX_COMMAND_LENGTH) return { problem: `the command is longer than ${MAX_COMMAND_LENGTH} characters` };
  return { command };
}

function collapse(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

/** The command with shell quoting and escapes removed, as the shell would pass words to a program. */
function unquoted(text: string): string {
  return text.replace(/["'\\]/g, '');
}

/** The commands of a chain, split at shell control operators and substitutions (quotes are not honoured: stricter). */
function segmentsOf(text: string): string[] {
  return text
    .split(/\|\||&&|[;|&\n`]|\$\(|\)/)
    .map(collapse)
    .filter((segment) => segment !== '');
}

/** Checks a call of a shell-like tool against the descriptor's and the tenant's command rules. */
export function checkCommand(
  commandPolicy: ToolDescriptor['commandPolicy'],
  tenantBlock: readonly string[],
  args: Readonly<Record<string, unknown>>,
  cache: LinearRegExpCache = new LinearRegExpCache(),
): CommandVerdict {
  if (commandPolicy === undefined) return { kind: 'not_applicable' };
  const extracted = commandOf(commandPolicy.argument, args);
  if ('problem' in extracted) return { kind: 'unreadable', problem: extracted.problem };
  const variants = [collapse(extracted.command), collapse(unquoted(extracted.command))];
  const blocks: [string, 'descriptor' | 'tenant-policy'][] = [
    ...commandPolicy.block.map((pattern): [string, 'descriptor'] => [pattern, 'descriptor']),
    ...tenantBlock.map((pattern): [string, 'tenant-policy'] => [pattern, 'tenant-policy']),
  ];
  for (const [pattern, by] of blocks) {
    const compiled = cache.compile(pattern, COMMAND_PATTERN_OPTIONS);
    if (!compiled.ok) return { kind: 'invalid_pattern', pattern, problem: compiled.problem };
    if (variants.some((variant) => compiled.regExp.test(variant))) return { kind: 'blocked', pattern, by };
  }
  if (commandPolicy.allow.length > 0) {
    const allows: LinearRegExp[] = [];
    for (const pattern of commandPolicy.allow) {
      const compiled = cache.compile(pattern, COMMAND_PATTERN_OPTIONS);
      if (!compiled.ok) return { kind: 'invalid_pattern', pattern, problem: compiled.problem };
      allows.push(compiled.regExp);
    }
    const segments = segmentsOf(extracted.command);
    if (segments.length === 0) return { kind: 'not_allowed', segment: 0 };
    const refused = segments.findIndex((segment) => !allows.some((allow) => allow.test(segment)));
    if (refused >= 0) return { kind: 'not_allowed', segment: refused };
  }
  return { kind: 'allowed' };
}
