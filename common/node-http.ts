/**
 * node:http, taken with require() instead of an ESM import. An ESM import builds the module's
 * namespace by reading every export, and three of node:http's are defined lazily from Node's
 * bundled undici (WebSocket, CloseEvent, MessageEvent): reading them loads it, about 750 KB of
 * source compiled into every process that imports node:http, measured at 12 MiB more resident
 * memory in a bare process (docs/benchmarks.md, "Memory"). intake uses none of them; require()
 * hands over the module object and only what is named below is read. Type-only imports of
 * node:http are free and stay where they are (test/unit/architecture.test.ts keeps it so).
 */
import type { Agent as HttpAgent } from 'node:http';
import { createRequire } from 'node:module';

const http = createRequire(import.meta.url)('node:http') as typeof import('node:http');

export const { Agent, STATUS_CODES, request } = http;
/** The type of Agent's instances, as `import { Agent } from 'node:http'` gives it. */
export type Agent = HttpAgent;
