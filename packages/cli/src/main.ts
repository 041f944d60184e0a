#!/usr/bin/env node
// The `toolplane` binary: the process's arguments, environment and standard streams, handed to runCli.
import { text } from 'node:stream/consumers';
import { runCli } from './program.js';

process.exitCode = await runCli(process.argv.slice(2), {
  stdout: (chunk) => process.stdout.write(chunk),
  stderr: (chunk) => process.stderr.write(chunk),
  readStdin: () => text(process.stdin),
  env: process.env,
});
