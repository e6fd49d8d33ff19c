/**
 * A stand-in for the pod network, for processes that run on loopback beside the test API server.
 * The API server refuses loopback addresses in EndpointSlices, so slices list documentation
 * addresses (192.0.2.0/24) as pods would have, and the operator reaches them through this HTTP
 * CONNECT proxy (Node's NODE_USE_ENV_PROXY + HTTP_PROXY; the API server stays direct by NO_PROXY),
 * which connects each pod address to the local port of the process playing that pod.
 */
import { createServer, type Server } from 'node:http';
import { connect } from 'node:net';

export interface PodNetwork {
  /** The environment that routes a process's fetch() to pod addresses through this network. */
  env: NodeJS.ProcessEnv;
  /** `podAddress:port` -> the local port answering for it (undefined: nothing answers, as for a deleted pod). */
  routes: Map<string, number>;
  close(): Promise<void>;
}

export async function startPodNetwork(): Promise<PodNetwork> {
  const routes = new Map<string, number>();
  const server: Server = createServer((_req, res) => res.writeHead(405).end());
  server.on('connect', (req, socket, head) => {
    const localPort = routes.get(req.url ?? '');
    if (localPort === undefined) return void socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n');
    const upstream = connect(localPort, '127.0.0.1', () => {
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      upstream.write(head);
      upstream.pipe(socket);
      socket.pipe(upstream);
    });
    // Nothing listens (a pod that went away): a failed CONNECT, as a gateway answers it.
    upstream.on('error', () =>
      upstream.connecting ? socket.end('HTTP/1.1 502 Bad Gateway\r\n\r\n') : socket.destroy(),
    );
    socket.on('error', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    env: {
      NODE_USE_ENV_PROXY: '1',
      HTTP_PROXY: `http://127.0.0.1:${port}`,
      NO_PROXY: '127.0.0.1,localhost,::1',
    },
    routes,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
