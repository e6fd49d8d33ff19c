/** A free loopback port: listen on port 0, note what the kernel gave, close. */
import { createServer } from 'node:net';

/**
 * Ports this process handed out already: the kernel may give a port it just freed to the next
 * listen(0), so two calls in a row (an ingester's listen and admin ports) could get the same one.
 */
const handedOut = new Set<number>();

function kernelPort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolvePromise(port));
    });
    srv.on('error', reject);
  });
}

export async function freePort(): Promise<number> {
  for (let attempt = 0; attempt < 50; attempt++) {
    const port = await kernelPort();
    if (handedOut.has(port)) continue;
    handedOut.add(port);
    return port;
  }
  throw new Error('freePort: the kernel kept giving ports this process already handed out');
}

/** What a server says when the port it was given is taken (Go's net.Listen, Node's EADDRINUSE). */
const PORT_TAKEN = /address already in use|EADDRINUSE/i;

/**
 * Starts a server on a free port, and on another one if that was taken meanwhile: another test's
 * process may listen on it between freePort() and this server's listen. `start` must fail with the
 * server's own output in its error (where "address already in use" shows) and clean up after itself.
 */
export async function onFreePort<T>(start: (port: number) => Promise<T>, attempts = 5): Promise<T> {
  return againIfPortTaken(async () => start(await freePort()), attempts);
}

/** `start` (which takes free ports itself) once more, up to `attempts` in all, while it fails for a taken port. */
export async function againIfPortTaken<T>(start: () => Promise<T>, attempts = 5): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (err) {
      if (attempt >= attempts || !PORT_TAKEN.test((err as Error).message)) throw err;
    }
  }
}
