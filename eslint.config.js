import js from '@eslint/js';
import tseslint from 'typescript-eslint';
import jest from 'eslint-plugin-jest';

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
  'activity',
  'auth',
  'limits',
  'sinks',
  'dead-letters',
  'mapping',
  'destinations',
  'events',
  'inspector',
  'http',
];

const OPERATOR_BAN = {
  group: ['**/operator/**'],
  message: 'the ingester shares only api/, common/ and kube/ with the operator',
};

/**
 * One no-restricted-imports rule per ingester folder: the operator ban every ingester file has, plus
 * the folders after it, main.ts and config.ts. (eslint-plugin-import-x's no-restricted-paths and
 * no-cycle would say the same, but their resolver's native bindings cannot be locked for every
 * platform from this registry, which breaks `npm ci`; test/unit/architecture.test.ts finds cycles.)
 */
const layerRules = INGESTER_LAYERS.map((layer, i) => ({
  files: [`ingester/${layer}/**/*.ts`],
  rules: {
    'no-restricted-imports': [
      'error',
      {
        patterns: [
          OPERATOR_BAN,
          {
            // `mapping` is also api/mapping (the shared engine), which every folder may use; and a
            // `./` import stays in the importer's own folder, whatever its subfolder is called
            // (destinations/http/ is the HTTP destination, not the http layer).
            group: [
              ...INGESTER_LAYERS.slice(i + 1).map((above) => `**/${above}/**`),
              '!**/api/mapping/**',
              '!./**',
              '**/main.js',
              '**/config.js',
            ],
            message: `ingester/${layer} sits below ${INGESTER_LAYERS.slice(i + 1).join(', ')}, main.ts and config.ts (docs/design.md "The ingester's map")`,
          },
        ],
      },
    ],
  },
}));

export default tseslint.config(
  {
    ignores: [
      'dist/',
      'node_modules/',
      'test/cluster/',
      '.testcluster/',
      '.testcluster-node/',
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
  { files: ['ingester/**/*.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [OPERATOR_BAN] }] } },
  // No upward import inside the ingester: per folder, these replace the rule above (and repeat its ban).
  ...layerRules,
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
  // The console is a component like the operator: it shares api/, common/ and kube/, nothing else.
  {
    files: ['console/**/*.ts', 'console/**/*.tsx'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            { group: ['**/ingester/**', '**/operator/**'], message: 'the console shares only api/, common/ and kube/' },
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
              group: ['**/ingester/**', '**/operator/**', '**/console/**'],
              allowTypeImports: true,
              message: 'cmd/ loads a component lazily: `await import()` inside the command, or `import type`',
            },
          ],
        },
      ],
    },
  },
);
