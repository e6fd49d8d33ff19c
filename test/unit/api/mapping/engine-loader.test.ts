/**
 * The mapping engine (and JSONata) is loaded only for routes that map: loadMappingEngineFor loads
 * it when one of the routes has a mapping, and the routing table takes it from there.
 */
import { loadMappingEngineFor, mappingEngine } from '../../../../api/mapping/mapping-engine-loader.js';

describe('the mapping engine loader', () => {
  it('loads nothing for routes without a mapping, and the engine for the first route with one', async () => {
    await loadMappingEngineFor([{}, { mapping: undefined }]);
    expect(() => mappingEngine()).toThrow('the mapping engine was not loaded before a mapped route was compiled');
    await loadMappingEngineFor([{}, { mapping: { preset: 'alertmanager' } }]);
    const compiled = mappingEngine().compileMapping({ expression: '{"source": host}' });
    expect(compiled.label).toBe('expression');
    expect((await compiled.evaluate({ host: 'web-1' })).items).toEqual([{ source: 'web-1' }]);
  });
});
