/** The namespace's view: its integrations and API keys, live (the server's watch stream, data/live.ts). */
import { ErrorText } from '../components/error-text.js';
import { ResourceTable } from '../components/resource-table.js';
import { useTick } from '../components/use-tick.js';
import { href } from '../data/model.js';
import type { ViewProps } from '../views.js';

export function ListPage({ params: { ns }, live }: ViewProps<'ns'>) {
  const now = useTick(5000);
  return (
    <main>
      {(['webhookintegrations', 'apikeys'] as const).map((plural) => {
        const items = [...live.items[plural].values()].sort((a, b) => a.metadata.name.localeCompare(b.metadata.name));
        return (
          <section key={plural} aria-labelledby={`h-${plural}`}>
            <div class="section-head">
              <h2 id={`h-${plural}`}>
                {plural === 'apikeys' ? 'API keys' : 'Integrations'}{' '}
                {live.loaded[plural] && <span class="count">{items.length}</span>}
              </h2>
              <a class="button" href={href('ns', ns, 'new', plural)}>
                New {plural === 'apikeys' ? 'API key' : 'integration'}
              </a>
            </div>
            {live.failures[plural] ? (
              <ErrorText message={live.failures[plural]} />
            ) : !live.loaded[plural] ? (
              <p class="loading">Loading…</p>
            ) : (
              <ResourceTable ns={ns} plural={plural} items={items} now={now} />
            )}
          </section>
        );
      })}
    </main>
  );
}
