/**
 * Every group of the console's endpoints, one module per area of the app. A new area is a module
 * exporting a ConsoleEndpoints and one line here.
 */
import type { ConsoleEndpoints } from '../context.js';
import { appFileEndpoints } from './app-files.js';
import { destinationEndpoints } from './destinations.js';
import { inspectorEndpoints } from './inspector.js';
import { liveEndpoints } from './live.js';
import { playgroundEndpoints } from './playground.js';
import { resourceEndpoints } from './resources.js';
import { sessionEndpoints } from './session.js';

export const CONSOLE_ENDPOINTS: readonly ConsoleEndpoints[] = [
  appFileEndpoints, // the page, its script and style
  sessionEndpoints, // sign in and out, who the user is
  liveEndpoints, // the list page's live feed
  resourceEndpoints, // integrations and API keys: read, write, credentials
  playgroundEndpoints, // test events, curl, spec.mapping.tests
  inspectorEndpoints, // captured requests, replay
  destinationEndpoints, // a namespace's destinations and the platform's: pause, resume, dead letters and their replay
];
