/**
 * The intake console: a single-page app (Preact) over the console server's API. Its views, by the
 * address's hash (views.ts picks the one whose path fits best); a new page is one line here:
 */
import { render } from 'preact';
import { App } from './app.js';
import { DetailPage } from './pages/detail.js';
import { EditPage, NewPage } from './pages/editor.js';
import { ListPage } from './pages/list.js';
import { view } from './views.js';

const VIEWS = [
  view('ns/:ns', ListPage), // integrations and API keys, live
  view('ns/:ns/new/:plural', NewPage), // create (form or YAML)
  view('ns/:ns/:plural/:name', DetailPage), // one object
  view('ns/:ns/:plural/:name/edit', EditPage), // edit (form or YAML)
];

render(<App views={VIEWS} />, document.getElementById('app') as HTMLElement);
