import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import jest from 'eslint-plugin-jest';
import importX from 'eslint-plugin-import-x';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';

/**
 * The ingester's parts, lowest first (docs/design.md "The ingester's map"): a folder may import its
 * own modules and those of the folders before it, never one after it; only ingester/main.ts and
 * ingester/config.ts (the composition root and the settings) import from every folder, and no
 * folder imports them.
 */
export const INGESTER_LAYERS = [
  'core',
  'storage',
  'outbound',
  'series',
  'routing',
  'auth',
  'limits',
  'sinks',
  'dead-letters',
  'mapping',
  'destinations',
  'events',
  'http',
];

const layerZones = INGESTER_LAYERS.map((layer, i) => ({
  target: `./ingester/${layer}`,
  from: [
    ...INGESTER_LAYERS.slice(i + 1).map((above) => `./ingester/${above}`),
    './ingester/main.ts',
    './ingester/config.ts',
  ],
  message: `ingester/${layer} sits below ${INGESTER_LAYERS.slice(i + 1).join(', ')}, main.ts and config.ts (docs/design.md "The ingester's map")`,
}));

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'test/cluster/',
      '.testcluster/',
      '.tools/',
      'coverage/',
      'ingester/series/remote-write/generated/',
    ],
  },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: {
      globals: {
        process: 'readonly',
        console: 'readonly',
        Buffer: 'readonly',
        setTimeout: 'readonly',
        clearTimeout: 'readonly',
        setInterval: 'readonly',
        clearInterval: 'readonly',
        URL: 'readonly',
      },
    },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // Every test asserts what it checks (not only by a waitFor timing out), and none is left skipped or focused.
  {
    files: ['test/**/*.test.ts'],
    plugins: { jest },
    rules: {
      // checkLoad (test/node/chart.test.ts): the sender's answers and the stream, checked with expect.
      'jest/expect-expect': ['error', { assertFunctionNames: ['expect', 'checkLoad'] }],
      'jest/no-disabled-tests': 'error',
      'jest/no-focused-tests': 'error',
    },
  },
  // No import cycles anywhere in the product code, and no upward import inside the ingester.
  {
    files: ['api/**/*.ts', 'cmd/**/*.ts', 'common/**/*.ts', 'ingester/**/*.ts', 'kube/**/*.ts', 'operator/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      ...importX.flatConfigs.typescript.settings,
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
      'import-x/no-restricted-paths': ['error', { zones: layerZones }],
    },
  },
  // Components depend on the shared contracts (api/, common/, kube/), never on each other.
  {
    files: ['operator/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/ingester/**'],
              message: 'the operator shares only api/, common/ and kube/ with the ingester',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['ingester/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/operator/**'],
              message: 'the ingester shares only api/, common/ and kube/ with the operator',
            },
          ],
        },
      ],
    },
  },
  {
    files: ['api/**/*.ts', 'common/**/*.ts', 'kube/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/ingester/**', '**/operator/**'], message: 'shared code must not depend on a component' },
          ],
        },
      ],
    },
  },
  // cmd/ loads a component only when its command runs: static imports of one are types only (await import() for the rest).
  {
    files: ['cmd/**/*.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              group: ['**/ingester/**', '**/operator/**'],
              allowTypeImports: true,
              message: 'cmd/ loads a component lazily: `await import()` inside the command, or `import type`',
            },
          ],
        },
      ],
    },
  },
);
