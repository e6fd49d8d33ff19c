/**
 * One integration or API key: its actions, where to send and with what, conditions, activity, and
 * for an integration a test event, the captured requests and the mapping playground.
 */
import { useEffect, useState } from 'preact/hooks';
import { ActivityView } from '../components/activity.js';
import { GitOpsBadge, ReadyBadge, SuspendedBadge } from '../components/badges.js';
import { Conditions } from '../components/conditions.js';
import { Connection } from '../components/connection.js';
import { ErrorText } from '../components/error-text.js';
import { Inspector } from '../components/inspector.js';
import { ObjectActions } from '../components/object-actions.js';
import { Playground } from '../components/playground.js';
import { TestEvent } from '../components/test-event.js';
import { href } from '../data/model.js';
import { isPlural, LABEL_OF, readResource, type Plural, type Resource } from '../data/resources.js';
import type { ViewProps } from '../views.js';

export function DetailPage({ params: { ns, plural, name }, live }: ViewProps<'ns' | 'plural' | 'name'>) {
  if (!isPlural(plural)) return <NoSuchKind plural={plural} />;
  return (
    <Detail ns={ns} plural={plural} name={name} resource={live.items[plural].get(name)} loaded={live.loaded[plural]} />
  );
}

export function NoSuchKind({ plural }: { plural: string }) {
  return (
    <main>
      <ErrorText message={`The console shows no kind ${plural}.`} />
    </main>
  );
}

function Detail(props: { ns: string; plural: Plural; name: string; resource?: Resource; loaded: boolean }) {
  const { ns, plural, name } = props;
  const [fetched, setFetched] = useState<Resource | undefined>();
  const [error, setError] = useState('');
  // The live list has it once loaded; until then (or if listing is forbidden) read it directly.
  useEffect(() => {
    if (!props.resource) readResource(ns, plural, name).then(setFetched, (e: Error) => setError(e.message));
  }, [ns, plural, name, props.loaded]);
  const r = props.resource ?? fetched;
  return (
    <main>
      <p class="crumbs">
        <a href={href('ns', ns)}>{ns}</a> / {LABEL_OF[plural].toLowerCase()}s / {name}
      </p>
      <h1>
        {name} {r && <ReadyBadge resource={r} />} {r && <GitOpsBadge resource={r} />}
        {r && <SuspendedBadge resource={r} />}
      </h1>
      {!r ? (
        error ? (
          <ErrorText message={error} />
        ) : props.loaded ? (
          <p class="muted">{name} does not exist (any more).</p>
        ) : (
          <p class="loading">Loading…</p>
        )
      ) : (
        <>
          <ObjectActions ns={ns} plural={plural} r={r} />
          <Connection ns={ns} plural={plural} r={r} />
          <Conditions r={r} />
          <ActivityView r={r} />
          {plural === 'webhookintegrations' && (
            <>
              <TestEvent ns={ns} r={r} />
              <Inspector ns={ns} r={r} />
              <Playground ns={ns} r={r} />
            </>
          )}
        </>
      )}
    </main>
  );
}
