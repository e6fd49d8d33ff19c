/**
 * The mapping playground: what a payload maps to and, per event, which routing rule matched and
 * where it would go (a dry run by the ingester: nothing accepted, counted or delivered), and a run
 * of spec.mapping.tests. The inspector's "Open in playground" loads a captured body here.
 */
import { useEffect, useState } from 'preact/hooks';
import type { CapturedRouting } from '../../../api/inspector.js';
import { sampleFor } from '../../../api/mapping/preset-samples.js';
import { inertText } from '../../../common/sender-text.js';
import type { MappingTestResult } from '../../shared/console-api.js';
import { runMappingTests, sendTestEvent } from '../data/playground.js';
import type { Resource } from '../data/resources.js';
import { ErrorText } from './error-text.js';
import { HttpStatus } from './http-status.js';
import { RoutingList } from './routing.js';
import { PayloadEditor } from './payload-editor.js';

/** The inspector (captured-request.tsx) dispatches this on window, with the payload as its detail. */
export const OPEN_IN_PLAYGROUND = 'intake:open-in-playground';

/** The ingester's answer to a dry run (its body as JSON when it is). */
interface DryRun {
  status: number;
  body: unknown;
}
type DryRunBody = { events?: unknown[]; routing?: CapturedRouting[]; message?: string } | undefined;

export function Playground({ ns, r }: { ns: string; r: Resource }) {
  const mapping = r.spec?.mapping as { preset?: string; expression?: string; tests?: unknown[] } | undefined;
  const [payload, setPayload] = useState(() => JSON.stringify(sampleFor(mapping?.preset), null, 2));
  const [mapped, setMapped] = useState<DryRun | undefined>();
  const [tests, setTests] = useState<MappingTestResult[] | undefined>();
  const [testing, setTesting] = useState(false);
  const [error, setError] = useState('');
  const rules = (r.spec?.rules as unknown[] | undefined) ?? [];
  useEffect(() => {
    const open = (e: Event) => {
      setPayload((e as CustomEvent<string>).detail);
      setMapped(undefined);
      document.getElementById('h-playground')?.scrollIntoView();
    };
    window.addEventListener(OPEN_IN_PLAYGROUND, open);
    return () => window.removeEventListener(OPEN_IN_PLAYGROUND, open);
  }, []);
  // Without a mapping the playground is still where routing rules are tried, on a plain event.
  if (!mapping && rules.length === 0) return null;
  const dryRun = async () => {
    setError('');
    try {
      const res = await sendTestEvent(ns, r.metadata.name, payload, true);
      let body: unknown = res.body;
      try {
        body = JSON.parse(res.body);
      } catch {
        // not JSON: shown as text
      }
      setMapped({ status: res.status, body });
    } catch (err) {
      setError((err as Error).message);
    }
  };
  const runTests = async () => {
    setError('');
    setTesting(true);
    try {
      setTests((await runMappingTests(ns, r.metadata.name)).results);
    } catch (err) {
      setError((err as Error).message);
    } finally {
      setTesting(false);
    }
  };
  const testCount = mapping?.tests?.length ?? 0;
  return (
    <section aria-labelledby="h-playground">
      <h2 id="h-playground">Mapping playground</h2>
      <p class="hint">
        Mapping: {mapping ? (mapping.preset ? `preset ${mapping.preset}` : 'a JSONata expression') : 'none'}
        {rules.length > 0 ? `; ${rules.length} routing rule(s)` : ''}. “Map” asks the ingester what this payload maps to
        and, per event, which routing rule matched and where it would go (a dry run: nothing is accepted, counted or
        delivered).
      </p>
      <PayloadEditor id="playground-payload" value={payload} onInput={setPayload} />
      <div class="actions">
        <button type="button" onClick={dryRun}>
          Map
        </button>
        <button type="button" class="secondary" onClick={runTests} disabled={!testCount || testing}>
          {testing ? 'Running spec.mapping.tests…' : `Run spec.mapping.tests (${testCount})`}
        </button>
      </div>
      <ErrorText message={error} />
      {mapped && <DryRunAnswer mapped={mapped} />}
      {tests && <TestResults tests={tests} />}
    </section>
  );
}

function DryRunAnswer({ mapped }: { mapped: DryRun }) {
  const body = mapped.body as DryRunBody;
  return (
    <div class="mapped" role="status">
      <p>
        <HttpStatus status={mapped.status} /> {body?.message ?? ''}
      </p>
      {body?.events ? (
        <>
          <h3>{body.events.length} event(s)</h3>
          {body.routing && <RoutingList routing={body.routing} />}
          <pre class="code mapped-events">{JSON.stringify(body.events, null, 2)}</pre>
        </>
      ) : (
        <pre class="code">{JSON.stringify(mapped.body, null, 2)}</pre>
      )}
    </div>
  );
}

function TestResults({ tests }: { tests: MappingTestResult[] }) {
  return (
    <ul class="test-results">
      {tests.map((t) => (
        <li key={t.index} class={t.passed ? 'pass' : 'fail'}>
          {t.index >= 0 ? `tests[${t.index}]` : 'mapping'}:{' '}
          {t.passed
            ? 'passed'
            : t.outcome === 'not run'
              ? inertText(t.message)
              : `${t.outcome ?? 'failed'}: ${inertText(t.message)}`}
        </li>
      ))}
    </ul>
  );
}
