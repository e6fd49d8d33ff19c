/**
 * The console's sample payloads (api/mapping/preset-samples.ts) are product code, kept true here:
 * each preset's sample is the first notification of its captured fixture (the tool's real payload)
 * and maps to at least one event through its preset, as a route maps it.
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { compileMapping, DEFAULT_MAPPING_LIMITS } from '../../../../api/mapping/engine.js';
import { PLAIN_EVENT, PRESET_SAMPLES, sampleFor } from '../../../../api/mapping/preset-samples.js';
import { PRESET_NAMES } from '../../../../api/mapping/presets.js';

const FIXTURES = join(process.cwd(), 'test/unit/api/mapping/fixtures');

describe.each(PRESET_NAMES)('the %s sample', (preset) => {
  it("is the tool's captured notification (the fixture's first case)", () => {
    const fixture = JSON.parse(readFileSync(join(FIXTURES, `${preset}.json`), 'utf8')) as {
      cases: Array<{ input: unknown }>;
    };
    expect(PRESET_SAMPLES[preset]).toEqual(fixture.cases[0]?.input);
  });

  it('maps to events through its preset', async () => {
    const { items } = await compileMapping({ preset }, DEFAULT_MAPPING_LIMITS).evaluate(sampleFor(preset));
    expect(items.length).toBeGreaterThan(0);
  });
});

it('gives the plain event without a preset, or for a name that is no preset', () => {
  expect(sampleFor(undefined)).toBe(PLAIN_EVENT);
  expect(sampleFor('toString')).toBe(PLAIN_EVENT);
});
