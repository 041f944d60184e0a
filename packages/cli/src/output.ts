/** Where a CLI run writes; a test passes its own. */
export interface CliIo {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** The whole of standard input (secrets are read from it, never from flags). */
  readonly readStdin: () => Promise<string>;
  readonly env: Readonly<Record<string, string | undefined>>;
}

/** Renders rows as aligned text columns under a header line. */
export function formatTable(columns: readonly string[], rows: readonly (readonly unknown[])[]): string {
  const cells = [columns, ...rows.map((row) => row.map(formatCell))];
  const widths = columns.map((_, i) => Math.max(...cells.map((row) => (row[i] ?? '').length)));
  return cells.map((row) => row.map((cell, i) => (i === row.length - 1 ? cell : cell.padEnd(widths[i] ?? 0))).join('  ').trimEnd()).join('\n') + '\n';
}

/** Renders `label: value` lines with the labels aligned. */
export function formatFields(fields: readonly (readonly [string, unknown])[]): string {
  const width = Math.max(...fields.map(([label]) => label.length));
  return fields.map(([label, value]) => `${`${label}:`.padEnd(width + 1)} ${formatCell(value)}`).join('\n') + '\n';
}

function formatCell(value: unknown): string {
  if (value === undefined || value === null || value === '') return '-';
  if (Array.isArray(value)) return value.length === 0 ? '-' : value.map(formatCell).join(',');
  return typeof value === 'string' ? value : JSON.stringify(value);
}
