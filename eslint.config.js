import js from '@eslint/js';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['dist/', 'node_modules/', 'test/cluster/', '.testcluster/', '.tools/', 'coverage/', 'ingester/series/remote-write/generated/'] },
  js.configs.recommended,
  ...tseslint.configs.recommended,
  {
    languageOptions: { globals: { process: 'readonly', console: 'readonly', Buffer: 'readonly', setTimeout: 'readonly', clearTimeout: 'readonly', setInterval: 'readonly', clearInterval: 'readonly', URL: 'readonly' } },
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // Components depend on the shared contracts (api/, common/, kube/), never on each other.
  { files: ['operator/**/*.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/ingester/**'], message: 'the operator shares only api/, common/ and kube/ with the ingester' }] }] } },
  { files: ['ingester/**/*.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/operator/**'], message: 'the ingester shares only api/, common/ and kube/ with the operator' }] }] } },
  { files: ['api/**/*.ts', 'common/**/*.ts', 'kube/**/*.ts'], rules: { 'no-restricted-imports': ['error', { patterns: [{ group: ['**/ingester/**', '**/operator/**'], message: 'shared code must not depend on a component' }] }] } },
);
