/**
 * The intake console: a single-page app (Preact) over the console server's API. Its views, by the
 * address's hash (views.ts picks the one whose path fits best); a new page is one line here:
 */
import { render } from 'preact';
import { App } from './app.js';
import { PlatformDestinationPage, TeamDestinationPage } from './pages/destination.js';
import { DestinationsPage } from './pages/destinations.js';
import { DetailPage } from './pages/detail.js';
import { EditPage, NewPage } from './pages/editor.js';
import { ListPage } from './pages/list.js';
import { view } from './views.js';

const VIEWS = [
  view('ns/:ns', ListPage), // integrations and API keys, live
  view('ns/:ns/new/:plural', NewPage), // create (form or YAML)
  view('ns/:ns/:plural/:name', DetailPage), // one object
  view('ns/:ns/:plural/:name/edit', EditPage), // edit (form or YAML)
  view('ns/:ns/destinations', DestinationsPage), // the namespace's destinations and the platform's
  view('ns/:ns/destinations/:name', TeamDestinationPage), // one of the namespace's Destinations
  view('ns/:ns/platform-destinations/:name', PlatformDestinationPage), // one of the platform's
];

render(<App views={VIEWS} />, document.getElementById('app') as HTMLElement);
