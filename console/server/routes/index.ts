/**
 * Every group of the console's routes, one module per area of the app. A new area is a module
 * exporting a ConsoleRoutes and one line here.
 */
import type { ConsoleRoutes } from '../context.js';
import { appFileRoutes } from './app-files.js';
import { destinationRoutes } from './destinations.js';
import { inspectorRoutes } from './inspector.js';
import { liveRoutes } from './live.js';
import { playgroundRoutes } from './playground.js';
import { resourceRoutes } from './resources.js';
import { sessionRoutes } from './session.js';

export const CONSOLE_ROUTES: readonly ConsoleRoutes[] = [
  appFileRoutes, // the page, its script and style
  sessionRoutes, // sign in and out, who the user is
  liveRoutes, // the list page's live feed
  resourceRoutes, // integrations and API keys: read, write, credentials
  playgroundRoutes, // test events, curl, spec.mapping.tests
  inspectorRoutes, // captured requests, replay
  destinationRoutes, // a namespace's destinations and the platform's: pause, resume, dead letters and their replay
];
