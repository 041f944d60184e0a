import { createPublicKey, type KeyObject } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { InvocationReceipt, ReceiptKeySet, ToolplaneError, adapterCommandSchemas, adapterOperations, verifyReceipt } from '@toolplane/contracts';
import type { CommandGroup } from '../command-group.js';
import type { CliContext } from '../context.js';
import { formatFields } from '../output.js';

// `toolplane receipts …`: a call's signed receipt checked offline against the tool adapter's public keys, and those
// keys (a JWKS) as the adapter publishes them. Neither needs a token: receipts and public keys are not secrets.

/** Reads a file, or standard input for `-`; INVALID_ARGUMENT naming the file when it cannot be read. */
async function readInput(context: CliContext, file: string, what: string): Promise<string> {
  if (file === '-') return context.io.readStdin();
  try {
    return await readFile(file, 'utf8');
  } catch {
    throw new ToolplaneError('INVALID_ARGUMENT', `cannot read the ${what} file ${file}`);
  }
}

function parseJson(text: string, what: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new ToolplaneError('INVALID_ARGUMENT', `the ${what} is not JSON`);
  }
}

/**
 * The receipt in a document: a receipt itself, or what carries one (the `--json` output of `invoke`, an invocation
 * reply or lookup with its `result`). INVALID_ARGUMENT when none is there or it is not a well-formed receipt.
 */
export function receiptIn(document: unknown): InvocationReceipt {
  const field = (value: unknown, name: string): unknown => (typeof value === 'object' && value !== null && name in value ? (value as Record<string, unknown>)[name] : undefined);
  const candidate = field(document, 'signature') !== undefined ? document : (field(document, 'receipt') ?? field(field(document, 'result'), 'receipt'));
  if (candidate === undefined) throw new ToolplaneError('INVALID_ARGUMENT', 'no receipt in the input: give a receipt or the --json output of toolplane invoke');
  const parsed = InvocationReceipt.safeParse(candidate);
  if (!parsed.success) throw new ToolplaneError('INVALID_ARGUMENT', `not a receipt: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return parsed.data;
}

/** The public keys of a JWKS by key id; INVALID_ARGUMENT when it is not a set of Ed25519 public keys. */
export function verificationKeys(document: unknown): ReadonlyMap<string, KeyObject> {
  const parsed = ReceiptKeySet.safeParse(document);
  if (!parsed.success) throw new ToolplaneError('INVALID_ARGUMENT', `the keys are not a JWKS of Ed25519 public keys: ${parsed.error.issues[0]?.message ?? 'invalid'}`);
  return new Map(parsed.data.keys.map((jwk) => [jwk.kid, createPublicKey({ key: { kty: jwk.kty, crv: jwk.crv, x: jwk.x }, format: 'jwk' })]));
}

/** The adapter's JWKS, asked on the given scope's subject (any scope will do: the keys are the adapter's). */
function fetchKeys(context: CliContext, scope?: { readonly tenant: string; readonly workspace: string }): Promise<ReceiptKeySet> {
  return context.call('adapter', adapterOperations.receiptKeys, adapterCommandSchemas.receiptKeys, {}, scope === undefined ? {} : { scope });
}

/** `toolplane receipts verify|keys`. */
export const receiptsCommands: CommandGroup = (program, context) => {
  const receipts = program.command('receipts').description('Verify signed call receipts offline and print the keys they verify with (no token needed).');

  receipts
    .command('verify')
    .description('verify a receipt (or the --json output of invoke) against the tool adapter’s public keys; exit 1 with the reason unless it is authentic')
    .argument('[file]', 'the receipt, or - for standard input', '-')
    .option('--keys <file>', 'a JWKS file with the public keys (default: ask the running tool adapter)')
    .action(async (file: string, options: { keys?: string }) => {
      const ctx = context();
      const receipt = receiptIn(parseJson(await readInput(ctx, file, 'receipt'), 'receipt'));
      // Without --keys the keys are asked for on the receipt's own scope unless the command names one.
      const keys = verificationKeys(options.keys === undefined ? await fetchKeys(ctx, scopeOrReceipts(ctx, receipt)) : parseJson(await readInput(ctx, options.keys, 'keys'), 'keys file'));
      const verification = verifyReceipt(receipt, keys);
      if (!verification.valid) throw new ToolplaneError('AUTHENTICATION_FAILED', `the receipt is not authentic: ${verification.problem}`);
      const summary = { valid: true, toolCallId: receipt.toolCallId, invocationId: receipt.invocationId, state: receipt.state, keyId: receipt.signature.keyId };
      ctx.print(summary, () =>
        `valid\n${formatFields([
          ['tool', `${receipt.toolId}@${receipt.toolVersion}`],
          ['tool call', receipt.toolCallId],
          ['state', receipt.state],
          ['scope', `${receipt.tenant}/${receipt.workspace}`],
          ['signed by key', receipt.signature.keyId],
        ])}`,
      );
    });

  receipts
    .command('keys')
    .description('print the public keys the tool adapter signs receipts with, as a JWKS (save it for receipts verify --keys)')
    .action(async () => {
      const ctx = context();
      const keys = await fetchKeys(ctx);
      ctx.print(keys, () => `${JSON.stringify(keys, null, 2)}\n`);
    });
};

function scopeOrReceipts(context: CliContext, receipt: InvocationReceipt): { readonly tenant: string; readonly workspace: string } {
  try {
    return context.scope();
  } catch {
    return { tenant: receipt.tenant, workspace: receipt.workspace };
  }
}
