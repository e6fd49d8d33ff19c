/**
 * A remote write receiver of our own on 127.0.0.1 that records every request (headers and the
 * decoded WriteRequest) and answers from a script, to check what goes over the wire.
 */
import {
  createServer,
  type IncomingHttpHeaders,
  type IncomingMessage,
  type Server,
  type ServerResponse,
} from 'node:http';
import { createServer as createHttpsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { fromBinary } from '@bufbuild/protobuf';
import { uncompressSync } from 'snappy';
import {
  WriteRequestSchema,
  type WriteRequest,
} from '../../../ingester/series/remote-write/generated/remote_write_v1_pb.js';
import { RequestSchema, type Request } from '../../../ingester/series/remote-write/generated/remote_write_v2_pb.js';

export interface Recorded {
  atMs: number;
  method: string;
  headers: IncomingHttpHeaders;
  /** A 1.0 request; for a 2.0 request (by its Content-Type) an empty one, and the message in requestV2. */
  request: WriteRequest;
  requestV2?: Request;
}

export interface Answer {
  status: number;
  headers?: Record<string, string>;
  body?: string;
}

export interface RecordingReceiver {
  url: string;
  requests: Recorded[];
  /** Answers for the next requests, in order; afterwards 204. */
  script: Answer[];
  close(): Promise<void>;
}

/** Plain HTTP, or HTTPS with `tls` (PEM certificate and key). */
export async function startRecordingReceiver(tls?: { cert: Buffer; key: Buffer }): Promise<RecordingReceiver> {
  const requests: Recorded[] = [];
  const script: Answer[] = [];
  const handler = (req: IncomingMessage, res: ServerResponse): void => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = uncompressSync(Buffer.concat(chunks)) as Buffer;
      const v2 = (req.headers['content-type'] ?? '').includes('proto=io.prometheus.write.v2.Request');
      requests.push({
        atMs: Date.now(),
        method: req.method ?? '',
        headers: req.headers,
        request: v2 ? fromBinary(WriteRequestSchema, new Uint8Array()) : fromBinary(WriteRequestSchema, raw),
        ...(v2 ? { requestV2: fromBinary(RequestSchema, raw) } : {}),
      });
      const answer = script.shift() ?? { status: 204 };
      res.writeHead(answer.status, answer.headers ?? {});
      res.end(answer.body ?? '');
    });
  };
  const server: Server = tls ? createHttpsServer(tls, handler) : createServer(handler);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `${tls ? 'https' : 'http'}://127.0.0.1:${port}/api/v1/write`,
    requests,
    script,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Samples of a request as `name{labels} value@ts` lines, for readable assertions. */
export function flatten(request: WriteRequest): Array<{ labels: Array<[string, string]>; value: number; ts: number }> {
  const out: Array<{ labels: Array<[string, string]>; value: number; ts: number }> = [];
  for (const s of request.timeseries) {
    for (const sample of s.samples)
      out.push({ labels: s.labels.map((l) => [l.name, l.value]), value: sample.value, ts: Number(sample.timestamp) });
  }
  return out;
}
