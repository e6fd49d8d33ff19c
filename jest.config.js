/** Jest runs the TypeScript sources directly (ts-jest, ESM). Unit, end-to-end and integration
 * tests are separate projects so each can run alone; `make test` runs them all. */
const common = {
  preset: 'ts-jest/presets/default-esm',
  testEnvironment: 'node',
  moduleNameMapper: { '^(\\.{1,2}/.*)\\.js$': '$1' },
  // Only test/: the test API server's etcd data (.testcluster) holds .snap files Jest would claim.
  roots: ['<rootDir>/test'],
  transform: { '^.+\\.ts$': ['ts-jest', { useESM: true }] },
};

/**
 * End-to-end tests that hold a latency, memory or rate bound: they run one at a time (project
 * `e2e-timed`, `make test` runs it --runInBand after the others), so a neighbouring test's load
 * cannot make them fail; every other test runs on all workers.
 */
const TIMED = [
  'hostile-neighbour/.*',
  'hardening-[^/]*',
  'mapping-isolation',
  'mapping-workers',
  'remote-write-memory',
  'remote-write-bounds',
  'route-loading',
  'signature-seen-messages',
  'jetstream/mapping-amplification',
  'dead-letters/delivery',
  'dead-letters/standalone',
  'destinations/misbehaving-receiver',
  'destinations/bus-namespace-consumers',
].map((path) => `/test/e2e/${path}\\.test\\.ts$`);

export default {
  // Per-test time limit; the integration tests raise it for themselves (jest.setTimeout).
  testTimeout: 30_000,
  projects: [
    { ...common, displayName: 'unit', testMatch: ['<rootDir>/test/unit/**/*.test.ts'] },
    {
      ...common,
      displayName: 'e2e',
      testMatch: ['<rootDir>/test/e2e/**/*.test.ts'],
      testPathIgnorePatterns: ['/node_modules/', ...TIMED],
    },
    { ...common, displayName: 'e2e-timed', testRegex: TIMED },
    // Against the real API server (make testcluster); run with --runInBand, they share one cluster.
    { ...common, displayName: 'integration', testMatch: ['<rootDir>/test/integration/**/*.test.ts'] },
    // The chart's pods on the test cluster's node (make testcluster-node, make test-cluster).
    { ...common, displayName: 'node', testMatch: ['<rootDir>/test/node/**/*.test.ts'] },
  ],
};
