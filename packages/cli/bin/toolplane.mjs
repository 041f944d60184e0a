#!/usr/bin/env node
// The `toolplane` command. It runs the built CLI (dist/main.js) when that build is current, and otherwise the
// TypeScript source through tsx, so the command works straight after `npm ci`, before any build, and never runs a
// build older than the source. "Current" means: every workspace package the CLI loads (itself and its
// @toolplane/* dependencies) has a build that is newer than each of its source files.
// TOOLPLANE_CLI_FROM=source or =dist forces one way (dist fails with a clear line when there is no build).
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { constants } from 'node:os';
import path from 'node:path';
import process from 'node:process';

const cliRoot = path.dirname(import.meta.dirname);
const workspaceDirs = path.dirname(cliRoot);

/** The package folders the CLI loads: itself and its @toolplane/* dependencies, transitively (siblings in packages/). */
function workspaceClosure() {
  const seen = new Set();
  const visit = (dir) => {
    if (seen.has(dir)) return;
    seen.add(dir);
    const manifest = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8'));
    for (const name of Object.keys(manifest.dependencies ?? {})) {
      if (name.startsWith('@toolplane/')) visit(path.join(workspaceDirs, name.slice('@toolplane/'.length)));
    }
  };
  visit(cliRoot);
  return [...seen];
}

/** The newest modification time of the source files under `dir` (tests excluded: they are not built). */
function newestSource(dir) {
  let newest = 0;
  for (const entry of readdirSync(dir, { withFileTypes: true, recursive: true })) {
    if (!entry.isFile() || !entry.name.endsWith('.ts') || entry.name.endsWith('.test.ts')) continue;
    newest = Math.max(newest, statSync(path.join(entry.parentPath, entry.name)).mtimeMs);
  }
  return newest;
}

/** Whether every package's build (its tsbuildinfo, written by each `tsc -b` that emits) is newer than its source. */
function buildIsCurrent() {
  if (!existsSync(path.join(cliRoot, 'dist', 'main.js'))) return false;
  return workspaceClosure().every((dir) => {
    const buildInfo = path.join(dir, 'dist', '.tsbuildinfo');
    return existsSync(buildInfo) && statSync(buildInfo).mtimeMs >= newestSource(path.join(dir, 'src'));
  });
}

const forced = process.env['TOOLPLANE_CLI_FROM'];
if (forced !== undefined && forced !== '' && forced !== 'source' && forced !== 'dist') {
  process.stderr.write(`INVALID_ARGUMENT: TOOLPLANE_CLI_FROM must be source or dist, not ${JSON.stringify(forced)}\n`);
  process.exit(1);
}
const fromDist = forced === 'dist' || (forced !== 'source' && buildIsCurrent());

if (fromDist) {
  if (!existsSync(path.join(cliRoot, 'dist', 'main.js'))) {
    process.stderr.write('INVALID_ARGUMENT: the CLI is not built (run npm run build), or unset TOOLPLANE_CLI_FROM to run it from source\n');
    process.exit(1);
  }
  await import('../dist/main.js');
} else {
  // A child node with tsx as its loader and the workspace packages resolved to their source (the
  // `@toolplane/source` export condition), exactly as the services run under `npm start` and in tests.
  // tsx is resolved from here (the repository's root dev dependency), not from the caller's folder.
  const tsx = import.meta.resolve('tsx');
  const child = spawn(process.execPath, ['--conditions=@toolplane/source', '--import', tsx, path.join(cliRoot, 'src', 'main.ts'), ...process.argv.slice(2)], {
    stdio: 'inherit',
  });
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP']) process.on(signal, () => child.kill(signal));
  child.on('error', (error) => {
    process.stderr.write(`INTERNAL: cannot start the CLI from source: ${error.message}\n`);
    process.exit(1);
  });
  child.on('exit', (code, signal) => {
    // A child ended by a signal exits as a shell reports it: 128 + the signal's number.
    process.exit(signal === null ? (code ?? 1) : 128 + (constants.signals[signal] ?? 0));
  });
}
