/**
 * Remote Write on the wire: 1.0 is a protobuf `prometheus.WriteRequest` (proto/remote_write_v1.proto),
 * 2.0 an `io.prometheus.write.v2.Request` (proto/remote_write_v2.proto); both compressed with the
 * Snappy block format (the framed format is not allowed by the specs).
 *
 * A series' labels never change, so their encoding is computed once per series with the generated
 * schema and reused: a request is assembled from those bytes and the samples with the library's
 * BinaryWriter, byte for byte what encoding the whole message with toBinary would give.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { compressSync } from 'snappy';
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

/** WriteRequest { repeated TimeSeries timeseries = 1 }, each TimeSeries { labels = 1; samples = 2 }. */
export function encodeWriteRequest(series: Iterable<SeriesSamples>): Uint8Array {
  const w = new BinaryWriter();
  for (const s of series) {
    w.tag(1, WireType.LengthDelimited).fork().raw(s.labelBytes);
    for (let i = 0; i < s.values.length; i++) {
      // Sample { double value = 1; int64 timestamp = 2 }
      w.tag(2, WireType.LengthDelimited)
        .fork()
        .tag(1, WireType.Bit64)
        .double(s.values[i] as number)
        .tag(2, WireType.Varint)
        .int64(s.timestamps[i] as number)
        .join();
    }
    w.join();
  }
  return w.finish();
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

export function snappyBlock(bytes: Uint8Array): Buffer {
  return compressSync(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
}
