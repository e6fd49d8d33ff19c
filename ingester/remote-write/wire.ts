/**
 * Remote Write 1.0 on the wire: a protobuf `prometheus.WriteRequest` (proto/remote_write_v1.proto),
 * compressed with the Snappy block format (the framed format is not allowed by the spec).
 *
 * A series' labels never change, so their encoding is computed once per series with the generated
 * schema and reused: a request is assembled from those bytes and the samples with the library's
 * BinaryWriter, byte for byte what encoding the whole message with toBinary would give.
 */
import { create, toBinary } from '@bufbuild/protobuf';
import { BinaryWriter, WireType } from '@bufbuild/protobuf/wire';
import { compressSync } from 'snappy';
import { TimeSeriesSchema } from './generated/remote_write_v1_pb.js';

export type Labels = ReadonlyArray<readonly [name: string, value: string]>;

/** One series in a request: its encoded labels and its samples, oldest first. */
export interface SeriesSamples {
  readonly labelBytes: Uint8Array;
  readonly values: number[];
  readonly timestamps: number[];
}

/** The `labels` fields (1) of a TimeSeries, for labels already sorted and free of empty strings. */
export function encodeLabels(labels: Labels): Uint8Array {
  return toBinary(TimeSeriesSchema, create(TimeSeriesSchema, { labels: labels.map(([name, value]) => ({ name, value })) }));
}

/** WriteRequest { repeated TimeSeries timeseries = 1 }, each TimeSeries { labels = 1; samples = 2 }. */
export function encodeWriteRequest(series: Iterable<SeriesSamples>): Uint8Array {
  const w = new BinaryWriter();
  for (const s of series) {
    w.tag(1, WireType.LengthDelimited).fork().raw(s.labelBytes);
    for (let i = 0; i < s.values.length; i++) {
      // Sample { double value = 1; int64 timestamp = 2 }
      w.tag(2, WireType.LengthDelimited).fork().tag(1, WireType.Bit64).double(s.values[i] as number).tag(2, WireType.Varint).int64(s.timestamps[i] as number).join();
    }
    w.join();
  }
  return w.finish();
}

export function snappyBlock(bytes: Uint8Array): Buffer {
  return compressSync(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
}
