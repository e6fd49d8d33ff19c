/**
 * The two calls an informer makes, over node:http(s) with a keep-alive agent: a list (GET, JSON)
 * and a watch (GET ?watch=true, one JSON event per line). Shaped like client-node's
 * `Watch.watch`, so the Informer takes either (kube/informer.ts `Watcher`).
 */
import type { IncomingMessage } from 'node:http';
import { request as httpRequest } from '../common/node-http.js';
import { request as httpsRequest } from 'node:https';
import type { ApiConnection } from './api-connection.js';

/** A list answer larger than this is refused (the route Secrets of 1,000 integrations are about 3 MiB). */
const MAX_LIST_BYTES = 256 * 1024 * 1024;
/** One watch event: an object of at most 1.5 MiB (etcd's limit) in its JSON, with room to spare. */
const MAX_EVENT_BYTES = 16 * 1024 * 1024;
/** A list that takes longer than this is abandoned and retried by the informer. */
const LIST_TIMEOUT_MS = 60_000;
/**
 * Items per page of a list (list). Each page costs the API server a request of its own (20,000
 * route Secrets took it 0.4-0.6 s of CPU whole, 0.9 s in pages of 2,000, 1.1-1.5 s in pages of
 * 500 when read one after the other), and each page is held whole while it is read, two at once
 * now that the next is asked for early: an ingester with 20,000 routes peaked at 174-177 MiB in
 * pages of 1,000 and 153-154 MiB in pages of 500, ready as fast (docs/benchmarks.md).
 */
const LIST_PAGE = 500;
/** A watch with no bytes (events or bookmarks) for this long past its server-side timeout is dead. */
const WATCH_SLACK_MS = 30_000;

/** A failed API call; `statusCode` as client-node reports it, so the informer's 410 check holds for both. */
export class ApiError extends Error {
  constructor(
    message: string,
    readonly statusCode?: number,
  ) {
    super(message);
  }
}

type Query = Record<string, string | number | boolean>;

interface ListPage<T> {
  items: T[];
  resourceVersion: string;
  continue?: string;
}

interface PageRequest<T> {
  page: Promise<ListPage<T>>;
  continueToken: Promise<string | undefined>;
  cancel(): void;
}

/** How much of a page's start is searched for its continue token (the list's metadata is a few hundred bytes). */
const MAX_HEAD_BYTES = 64 * 1024;

/**
 * The continue token in the start of a list's JSON, before its items: the token, '' when the
 * metadata has none, null when the items have not begun yet (more of the page is needed). Only
 * the text before `"items":` is searched, where nothing but the list's own kind and metadata is.
 */
export function continueInHead(head: string): string | null {
  const items = head.indexOf('"items":');
  if (items < 0) return null;
  return /"continue":"([^"\\]*)"/.exec(head.slice(0, items))?.[1] ?? '';
}

function urlOf(conn: ApiConnection, path: string, query: Query): URL {
  const url = new URL(`${conn.server}${path}`);
  for (const [k, v] of Object.entries(query)) url.searchParams.set(k, String(v));
  return url;
}

function get(conn: ApiConnection, url: URL, signal: AbortSignal): Promise<IncomingMessage> {
  const headers: Record<string, string> = { accept: 'application/json' };
  const authorization = conn.authorization();
  if (authorization) headers.authorization = authorization;
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest;
  return new Promise((resolve, reject) => {
    const req = send(url, { method: 'GET', agent: conn.agent, headers, signal }, resolve);
    req.on('error', reject);
    req.end();
  });
}

/** The API server's Status message for a refused call (never the request, which holds the token). */
async function refusal(res: IncomingMessage, what: string): Promise<ApiError> {
  let text = '';
  try {
    for await (const chunk of res) {
      text += String(chunk);
      if (text.length > 4096) break;
    }
  } catch {
    // the reason is optional; the status is what matters
  }
  res.destroy();
  let message = '';
  try {
    message = String((JSON.parse(text) as { message?: unknown }).message ?? '');
  } catch {
    message = text.slice(0, 200);
  }
  return new ApiError(`${what}: HTTP ${res.statusCode}${message ? `: ${message}` : ''}`, res.statusCode);
}

export class KubeApiClient {
  constructor(private readonly conn: ApiConnection) {}

  /**
   * GET a collection, LIST_PAGE items at a time (limit and continue: every page is of the same
   * snapshot); resolves to its items, each as `each` maps it as its page arrives, and the list's
   * resourceVersion. Read whole, the list of 20,000 route Secrets was 28 MiB of JSON and every
   * Secret whole in memory at once: most of an ingester's peak RSS in Kubernetes mode
   * (docs/benchmarks.md); by pages, with `each` keeping only what the caller reads, one page is.
   *
   * The next page is asked for as soon as this one's continue token has arrived (the API server
   * writes a list's metadata before its items), so the API server reads and encodes it while this
   * page still arrives and its items are mapped: one page after the other, the wait for each page
   * and the work on the one before it added up. At most two pages are in memory at once.
   */
  async list<T, U = T>(
    path: string,
    query: Query = {},
    each: (item: T) => U = (item) => item as unknown as U,
  ): Promise<{ items: U[]; resourceVersion: string }> {
    const items: U[] = [];
    const pageOf = (token?: string): PageRequest<T> =>
      this.startPage<T>(path, { ...query, limit: LIST_PAGE, ...(token ? { continue: token } : {}) });
    let current = pageOf();
    for (;;) {
      const early = await current.continueToken;
      let next = early ? pageOf(early) : undefined;
      let page: ListPage<T>;
      try {
        page = await current.page;
      } catch (err) {
        next?.cancel();
        throw err;
      }
      // The token read from the page's head is the one its metadata holds; should they ever
      // differ, the metadata's wins and the page asked for early is dropped.
      if (page.continue !== early) {
        next?.cancel();
        next = page.continue ? pageOf(page.continue) : undefined;
      }
      for (const item of page.items) items.push(each(item));
      if (!next) return { items, resourceVersion: page.resourceVersion };
      current = next;
    }
  }

  /**
   * Starts one page's request. `continueToken` resolves as soon as the page's head shows its
   * continue token (undefined: none, or not found there), at the latest when the page ends.
   */
  private startPage<T>(path: string, query: Query): PageRequest<T> {
    const cancelled = new AbortController();
    const signal = AbortSignal.any([cancelled.signal, AbortSignal.timeout(LIST_TIMEOUT_MS)]);
    let announce: (token: string | undefined) => void = () => undefined;
    const continueToken = new Promise<string | undefined>((resolve) => (announce = resolve));
    const page = (async (): Promise<ListPage<T>> => {
      try {
        const res = await get(this.conn, urlOf(this.conn, path, query), signal);
        if (res.statusCode !== 200) throw await refusal(res, `list ${path}`);
        const chunks: Buffer[] = [];
        let size = 0;
        let head: string | undefined = '';
        for await (const chunk of res as AsyncIterable<Buffer>) {
          size += chunk.length;
          if (size > MAX_LIST_BYTES) {
            res.destroy();
            throw new ApiError(`list ${path}: answer larger than ${MAX_LIST_BYTES} bytes`);
          }
          chunks.push(chunk);
          if (head !== undefined) {
            head += chunk.toString('latin1', 0, Math.min(chunk.length, MAX_HEAD_BYTES));
            const token = continueInHead(head);
            if (token !== null || head.length >= MAX_HEAD_BYTES) {
              announce(token || undefined);
              head = undefined;
            }
          }
        }
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
          items?: T[];
          metadata?: { resourceVersion?: string; continue?: string };
        };
        return {
          items: body.items ?? [],
          resourceVersion: body.metadata?.resourceVersion ?? '',
          ...(body.metadata?.continue ? { continue: body.metadata.continue } : {}),
        };
      } finally {
        announce(undefined);
      }
    })();
    // A page asked for early and then dropped (its list failed) must not be an unhandled rejection.
    page.catch(() => undefined);
    return { page, continueToken, cancel: () => cancelled.abort() };
  }

  /**
   * Starts a watch; `onEvent` gets each event's type and object, `done` is called once when the
   * watch ends (undefined when the server ended it normally). Resolves once the server answered
   * 200, with the controller that stops it; rejects with the API's status otherwise.
   */
  async watch<O>(
    path: string,
    query: Query,
    onEvent: (phase: string, obj: O) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    const controller = new AbortController();
    const timeoutSeconds = Number(query.timeoutSeconds ?? 0);
    const res = await get(this.conn, urlOf(this.conn, path, { ...query, watch: true }), controller.signal);
    if (res.statusCode !== 200) throw await refusal(res, `watch ${path}`);
    let finished = false;
    const finish = (err?: unknown): void => {
      if (finished) return;
      finished = true;
      clearTimeout(deadline);
      done(err);
    };
    // The server ends the watch after timeoutSeconds; one that neither ends nor sends is a dead
    // connection (a half-open socket) that would otherwise keep the cache stale for ever.
    const deadline =
      timeoutSeconds > 0
        ? setTimeout(
            () => {
              res.destroy();
              finish(new ApiError(`watch ${path}: no end ${timeoutSeconds} s after it started`));
            },
            timeoutSeconds * 1000 + WATCH_SLACK_MS,
          ).unref()
        : undefined;
    let pending = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      pending += chunk;
      let newline: number;
      while ((newline = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, newline);
        pending = pending.slice(newline + 1);
        if (line.trim() === '') continue;
        let event: { type?: unknown; object?: unknown };
        try {
          event = JSON.parse(line) as typeof event;
        } catch {
          res.destroy();
          return finish(new ApiError(`watch ${path}: an event that is not JSON`));
        }
        onEvent(String(event.type), event.object as O);
        if (finished) return;
      }
      if (pending.length > MAX_EVENT_BYTES) {
        res.destroy();
        finish(new ApiError(`watch ${path}: an event larger than ${MAX_EVENT_BYTES} bytes`));
      }
    });
    res.on('end', () => finish());
    // Closed before its end (a reset, a proxy timing out): a failure, so the informer backs off.
    const lost = (): void =>
      finish(
        controller.signal.aborted
          ? abortError()
          : new ApiError(`watch ${path}: the connection closed before the watch ended`),
      );
    res.on('error', lost);
    res.on('close', () => (res.complete ? finish() : lost()));
    return controller;
  }
}

function abortError(): Error {
  const err = new Error('the watch was stopped');
  err.name = 'AbortError';
  return err;
}
