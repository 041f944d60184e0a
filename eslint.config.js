// One lint configuration for every workspace (each runs `eslint .` from its own folder).
import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import { importX } from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import unicorn from 'eslint-plugin-unicorn';
import path from 'node:path';

// Every workspace lints itself from its own folder; which one it is decides the confined imports it may use.
const workspace = path.relative(import.meta.dirname, process.cwd()).split(path.sep).join('/');

/** Client libraries that only one package may import: the rest of the code goes through that package. */
const confinedClients = [
  { pattern: '@nats-io/*', owner: 'packages/messaging', why: 'only @toolplane/messaging talks to NATS' },
  { pattern: 'mongodb', owner: 'packages/store', why: 'only @toolplane/store talks to MongoDB' },
  { pattern: '@modelcontextprotocol/*', owner: 'packages/mcp', why: 'only @toolplane/mcp speaks MCP' },
  { pattern: '@modelcontextprotocol/*/*', owner: 'packages/mcp', why: 'only @toolplane/mcp speaks MCP' },
];

const restrictedImports = (except) => ({
  patterns: [
    ...confinedClients
      .filter((c) => c.owner !== except)
      .map((c) => ({ group: [c.pattern], message: c.why })),
    { group: ['@toolplane/*/src/*', '@toolplane/*/dist/*'], message: 'import a package by its name, never its internals' },
  ],
});

export default tseslint.config(
  { ignores: ['**/dist/**', '**/node_modules/**', '**/generated/**', '**/.turbo/**', '.local/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  importX.flatConfigs.typescript,
  {
    languageOptions: {
      parserOptions: {
        project: ['./tsconfig.test.json'],
        tsconfigRootDir: process.cwd(),
      },
    },
    plugins: { 'import-x': importX, unicorn },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.test.json', conditionNames: ['@toolplane/source', 'types', 'import', 'default'] })],
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'import-x/no-cycle': 'error',
      'import-x/no-default-export': 'error',
      'import-x/no-self-import': 'error',
      'unicorn/filename-case': ['error', { case: 'kebabCase' }],
      'no-restricted-syntax': [
        'error',
        { selector: 'TSEnumDeclaration', message: 'use an `as const` object or z.enum, not a TS enum' },
        { selector: 'ExportAllDeclaration', message: 'export names explicitly; no `export *` barrels' },
      ],
      'no-restricted-imports': ['error', restrictedImports(workspace)],
    },
  },
  {
    // Config files must default-export.
    files: ['**/vitest.config.ts', 'eslint.config.js', 'vitest.preset.ts'],
    rules: { 'import-x/no-default-export': 'off' },
  },
  {
    files: ['**/*.js', '**/*.mjs'],
    ...tseslint.configs.disableTypeChecked,
  },
);
