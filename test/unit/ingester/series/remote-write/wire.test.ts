/** The request assembled from cached label bytes is the message the generated schema encodes. */
import { create, fromBinary, toBinary } from '@bufbuild/protobuf';
import { uncompressSync } from 'snappy';
import { WriteRequestSchema } from '../../../../../ingester/series/remote-write/generated/remote_write_v1_pb.js';
import {
  encode,
  encodeLabels,
  encodeWriteRequest,
  snappyBlock,
  v2BodyAsV1,
} from '../../../../../ingester/series/remote-write/wire.js';

const a: Array<[string, string]> = [
  ['__name__', 'up'],
  ['job', 'x'],
];
const b: Array<[string, string]> = [
  ['__name__', 'temp'],
  ['source', 'h\u00e9'],
];

it('encodes byte for byte what toBinary gives for the whole WriteRequest', () => {
  const assembled = encodeWriteRequest([
    { labelBytes: encodeLabels(a), values: [1.5, -2], timestamps: [1_700_000_000_000, 1_700_000_000_001] },
    { labelBytes: encodeLabels(b), values: [Infinity], timestamps: [1_700_000_000_002] },
  ]);
  const whole = toBinary(
    WriteRequestSchema,
    create(WriteRequestSchema, {
      timeseries: [
        {
          labels: a.map(([name, value]) => ({ name, value })),
          samples: [
            { value: 1.5, timestamp: 1_700_000_000_000n },
            { value: -2, timestamp: 1_700_000_000_001n },
          ],
        },
        {
          labels: b.map(([name, value]) => ({ name, value })),
          samples: [{ value: Infinity, timestamp: 1_700_000_000_002n }],
        },
      ],
    }),
  );
  expect(Buffer.from(assembled).equals(Buffer.from(whole))).toBe(true);
});

it('round-trips through the Snappy block format, zero and NaN values included', () => {
  const body = snappyBlock(encodeWriteRequest([{ labelBytes: encodeLabels(a), values: [0, NaN], timestamps: [1, 2] }]));
  const decoded = fromBinary(WriteRequestSchema, uncompressSync(body) as Buffer);
  expect(decoded.timeseries[0]?.samples.map((s) => [s.value, s.timestamp])).toEqual([
    [0, 1n],
    [NaN, 2n],
  ]);
});

it('writes a negative timestamp and a long series as toBinary does', () => {
  const many = Array.from({ length: 300 }, (_, i) => (i + 1) * 1.25); // toBinary leaves a 0 out
  const assembled = encodeWriteRequest([
    { labelBytes: encodeLabels(a), values: [1, 2, 3], timestamps: [-1, 1, -1_700_000_000_000] },
    { labelBytes: encodeLabels(b), values: many, timestamps: many.map((_, i) => 2 ** 52 + i) },
  ]);
  const whole = toBinary(
    WriteRequestSchema,
    create(WriteRequestSchema, {
      timeseries: [
        {
          labels: a.map(([name, value]) => ({ name, value })),
          samples: [
            { value: 1, timestamp: -1n },
            { value: 2, timestamp: 1n },
            { value: 3, timestamp: -1_700_000_000_000n },
          ],
        },
        {
          labels: b.map(([name, value]) => ({ name, value })),
          samples: many.map((value, i) => ({ value, timestamp: BigInt(2 ** 52 + i) })),
        },
      ],
    }),
  );
  expect(Buffer.from(assembled).equals(Buffer.from(whole))).toBe(true);
});

it('turns a queued 2.0 request into the 1.0 request of the same samples (a receiver that refuses 2.0)', () => {
  const series = [
    { labelBytes: encodeLabels(a), labels: a, help: 'h', unit: 'u', values: [1.5], timestamps: [1_700_000_000_000] },
    { labelBytes: encodeLabels(b), labels: b, help: '', unit: '', values: [2, 3], timestamps: [5, 6] },
  ];
  expect(v2BodyAsV1(encode('2.0', series)).equals(encode('1.0', series))).toBe(true);
});
