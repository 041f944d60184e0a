// The console's script and stylesheet, read once at start from the package's own files: beside this module in the
// source tree, and from the source tree when running the build output (tsc does not copy them), so `node dist/main.js`
// serves them too. No CDN, no bundler.
import { readFile } from 'node:fs/promises';

/** A static file as served. */
export interface Asset {
  readonly body: Buffer;
  readonly contentType: string;
}

/** The two assets by name. */
export type Assets = Readonly<Record<'console.js' | 'console.css', Asset>>;

const contentTypes = { 'console.js': 'text/javascript; charset=utf-8', 'console.css': 'text/css; charset=utf-8' } as const;

// src/adapters → src/assets; dist/adapters → dist/assets (if copied), else the package's src/assets.
const folders = ['../assets/', '../../src/assets/'];

async function readAsset(name: keyof typeof contentTypes): Promise<Asset> {
  let last: unknown;
  for (const folder of folders) {
    try {
      return { body: await readFile(new URL(`${folder}${name}`, import.meta.url)), contentType: contentTypes[name] };
    } catch (error) {
      last = error;
    }
  }
  throw new Error(`the console's ${name} is missing from the package`, { cause: last });
}

/** Reads both assets (rejects when one is missing: the console would be unusable). */
export async function loadAssets(): Promise<Assets> {
  const [script, styles] = await Promise.all([readAsset('console.js'), readAsset('console.css')]);
  return { 'console.js': script, 'console.css': styles };
}
