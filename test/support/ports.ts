/** A free loopback port: listen on port 0, note what the kernel gave, close. */
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  return new Promise((resolvePromise, reject) => {
    const srv = createServer();
    srv.listen(0, '127.0.0.1', () => {
      const port = (srv.address() as { port: number }).port;
      srv.close(() => resolvePromise(port));
    });
    srv.on('error', reject);
  });
}
