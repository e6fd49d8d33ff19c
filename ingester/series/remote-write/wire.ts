/**
 * Remote Write on the wire: 1.0 is a protobuf `prometheus.WriteRequest` (proto/remote_write_v1.proto),
 * 2.0 an `io.prometheus.write.v2.Request` (proto/remote_write_v2.proto); both compressed with the
 * Snappy block format (the framed format is not allowed by the specs).
 *
 * A series' labels never change, so their encoding is computed once per series with the generated
 * schema and reused: a 1.0 request is assembled from those bytes and the samples, byte for byte
 * what encoding the whole message with toBinary would give.
 */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { compressSync, uncompressSync } from 'snappy';
import { TimeSeriesSchema } from './generated/remote_write_v1_pb.js';
import { Metadata_MetricType, RequestSchema } from './generated/remote_write_v2_pb.js';

export type Labels = ReadonlyArray<readonly [name: string, value: string]>;

/** One series in a request: its encoded labels and its samples, oldest first. */
export interface SeriesSamples {
  readonly labelBytes: Uint8Array;
  readonly values: number[];
  readonly timestamps: number[];
}

/** What 2.0 needs besides the samples: the labels themselves (as symbol references) and metadata. */
export interface SeriesSamplesV2 extends SeriesSamples {
  readonly labels: Labels;
  readonly help: string;
  readonly unit: string;
}

export type Protocol = '1.0' | '2.0';

/** The `labels` fields (1) of a TimeSeries, for labels already sorted and free of empty strings. */
export function encodeLabels(labels: Labels): Uint8Array {
  return toBinary(
    TimeSeriesSchema,
    create(TimeSeriesSchema, { labels: labels.map(([name, value]) => ({ name, value })) }),
  );
}

/**
 * WriteRequest { repeated TimeSeries timeseries = 1 }, each TimeSeries { labels = 1; samples = 2 },
 * each Sample { double value = 1; int64 timestamp = 2 }: sized first, then written into one buffer.
 * A general protobuf writer allocates a few objects per sample, and a batch is thousands of them:
 * that garbage, not the batch, was most of what a full queue added to the process' memory.
 */
export function encodeWriteRequest(series: Iterable<SeriesSamples>): Uint8Array {
  const list = [...series];
  let size = 0;
  const inner: number[] = [];
  for (const s of list) {
    let n = s.labelBytes.length;
    for (const ts of s.timestamps) n += 2 + sampleBytes(ts);
    inner.push(n);
    size += 1 + varintBytes(n) + n;
  }
  const out = Buffer.allocUnsafe(size);
  let at = 0;
  list.forEach((s, i) => {
    out[at++] = 0x0a; // field 1, length-delimited
    at = writeVarint(out, at, inner[i] as number);
    out.set(s.labelBytes, at);
    at += s.labelBytes.length;
    for (let k = 0; k < s.values.length; k++) {
      const ts = s.timestamps[k] as number;
      out[at++] = 0x12; // field 2, length-delimited
      out[at++] = sampleBytes(ts); // at most 20: one byte
      out[at++] = 0x09; // value: field 1, 64-bit
      at = out.writeDoubleLE(s.values[k] as number, at);
      out[at++] = 0x10; // timestamp: field 2, varint
      at = writeInt64(out, at, ts);
    }
  });
  return out;
}

/** A Sample's bytes after its tag and length: the double with its tag, the timestamp with its tag. */
function sampleBytes(ts: number): number {
  return 1 + 8 + 1 + (ts < 0 ? 10 : varintBytes(ts));
}

function varintBytes(n: number): number {
  let bytes = 1;
  while (n >= 128) {
    n = Math.floor(n / 128);
    bytes++;
  }
  return bytes;
}

/** A non-negative integer up to 2^53 as a varint. */
function writeVarint(out: Buffer, at: number, n: number): number {
  while (n >= 128) {
    out[at++] = (n % 128) | 0x80;
    n = Math.floor(n / 128);
  }
  out[at++] = n;
  return at;
}

/** An int64 as protobuf writes it: a negative one as its 64-bit two's complement (ten bytes). */
function writeInt64(out: Buffer, at: number, n: number): number {
  if (n >= 0) return writeVarint(out, at, n);
  let v = BigInt.asUintN(64, BigInt(n));
  while (v >= 128n) {
    out[at++] = Number(v & 0x7fn) | 0x80;
    v >>= 7n;
  }
  out[at++] = Number(v);
  return at;
}

/** Request { symbols = 4 (symbols[0] is ""); timeseries = 5 }, every series a gauge with its HELP and unit. */
export function encodeRequestV2(series: Iterable<SeriesSamplesV2>): Uint8Array {
  const symbols = [''];
  const index = new Map<string, number>([['', 0]]);
  const ref = (text: string): number => {
    let i = index.get(text);
    if (i === undefined) {
      i = symbols.push(text) - 1;
      index.set(text, i);
    }
    return i;
  };
  const timeseries = [];
  for (const s of series) {
    const labelsRefs: number[] = [];
    for (const [name, value] of s.labels) labelsRefs.push(ref(name), ref(value));
    timeseries.push({
      labelsRefs,
      samples: s.values.map((value, i) => ({ value, timestamp: BigInt(s.timestamps[i] as number) })),
      metadata: { type: Metadata_MetricType.GAUGE, helpRef: ref(s.help), unitRef: ref(s.unit) },
    });
  }
  return toBinary(RequestSchema, create(RequestSchema, { symbols, timeseries }));
}

export function encode(protocol: Protocol, series: SeriesSamplesV2[]): Buffer {
  return snappyBlock(protocol === '2.0' ? encodeRequestV2(series) : encodeWriteRequest(series));
}

/**
 * The Snappy block format. The output is copied into a buffer of Node's own: the library's
 * allocator otherwise holds it, and kept what a full queue had taken after the queue drained.
 */
export function snappyBlock(bytes: Uint8Array): Buffer {
  return compressSync(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), { copyOutputData: true });
}

/**
 * A 2.0 request as a 1.0 one, for a receiver that turned out not to speak 2.0: a queued batch is
 * kept only as its compressed request, so it is decoded again (once, when the receiver refuses 2.0).
 */
export function v2BodyAsV1(body: Buffer): Buffer {
  const request = fromBinary(RequestSchema, uncompressSync(body) as Buffer);
  const { symbols } = request;
  const series = request.timeseries.map((ts) => {
    const labels: Array<[string, string]> = [];
    for (let i = 0; i + 1 < ts.labelsRefs.length; i += 2)
      labels.push([symbols[ts.labelsRefs[i] as number] ?? '', symbols[ts.labelsRefs[i + 1] as number] ?? '']);
    return {
      labelBytes: encodeLabels(labels),
      values: ts.samples.map((sample) => sample.value),
      timestamps: ts.samples.map((sample) => Number(sample.timestamp)),
    };
  });
  return snappyBlock(encodeWriteRequest(series));
}
