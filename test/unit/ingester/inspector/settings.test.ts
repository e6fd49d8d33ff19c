/** The inspector block of the settings file: defaults, a Go-style maxAge, a share never above its whole. */
import { ConfigError } from '../../../../common/config-files.js';
import { DEFAULT_INSPECTOR, resolveInspector } from '../../../../ingester/inspector/settings.js';

it('defaults when absent', () => {
  expect(resolveInspector(undefined)).toEqual(DEFAULT_INSPECTOR);
  expect(DEFAULT_INSPECTOR).toMatchObject({ maxBodyBytes: 16384, maxAgeMs: 3_600_000 });
});

it('reads maxAge as a Go-style duration, at least a second', () => {
  expect(resolveInspector({ maxAge: '15m' }).maxAgeMs).toBe(900_000);
  expect(() => resolveInspector({ maxAge: '500ms' })).toThrow(ConfigError);
  expect(() => resolveInspector({ maxAge: 'an hour' })).toThrow(/inspector.maxAge/);
});

it('lowers the default share to a smaller whole, and refuses a given share above it', () => {
  expect(resolveInspector({ maxBytes: 1 << 20 }).maxBytesPerNamespace).toBe(1 << 20);
  expect(() => resolveInspector({ maxBytes: 1 << 20, maxBytesPerNamespace: 2 << 20 })).toThrow(
    /inspector.maxBytesPerNamespace .* must not exceed inspector.maxBytes/,
  );
});
