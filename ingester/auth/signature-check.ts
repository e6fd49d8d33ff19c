/**
 * Checking a signed request (docs/signatures.md), in two steps:
 * - `readSignedHeaders`, before any byte of the body is read: the scheme's headers are there, once
 *   each, and the timestamp is within the tolerance (a stale request is refused without reading it);
 * - `signatureMatches`, over the body's exact bytes and before anything parses them: some listed
 *   signature equals the HMAC of the signed content under a secret valid now, compared in constant time.
 */
import { createHmac, timingSafeEqual, type KeyObject } from 'node:crypto';
import type { AuthFailureReason } from '../core/errors.js';
import type { SignatureRule } from '../../api/signatures.js';
import type { CompiledSignature } from '../routing/signing-secrets.js';
import { soleHeader } from './basic-auth.js';

export type SignatureFailure = Extract<AuthFailureReason, 'signature_missing' | 'timestamp_out_of_range'>;

/** What the headers say, read once in onRequest and checked against the body later. */
export interface SignedHeaders {
  signatures: string;
  timestamp?: string;
  /** The message id (Standard Webhooks `webhook-id`, or hmac's idHeader): signed, so it may name the events. */
  id?: string;
}

/** A header longer than this is not a list of signatures anyone sends. */
const MAX_SIGNATURE_HEADER = 4096;
/** Signatures compared at most per request (a rotation lists two; the spec allows a few). */
const MAX_SIGNATURES = 16;
const TIMESTAMP = /^\d{1,12}$/;
/** Visible ASCII, as an Idempotency-Key (core/event-id.ts): the id becomes part of the events' ids. */
const MESSAGE_ID = /^[\x21-\x7e]{1,256}$/;
const HEX = /^(?:[0-9a-fA-F]{2})+$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;

export function readSignedHeaders(
  rule: SignatureRule,
  rawHeaders: readonly string[],
  nowMs: number,
): SignedHeaders | SignatureFailure {
  const signatures = soleHeader(rawHeaders, rule.header);
  if (signatures === undefined || signatures === '' || signatures.length > MAX_SIGNATURE_HEADER)
    return 'signature_missing';
  const headers: SignedHeaders = { signatures };
  if (rule.idHeader) {
    const id = soleHeader(rawHeaders, rule.idHeader)?.trim();
    if (id === undefined || !MESSAGE_ID.test(id)) return 'signature_missing';
    headers.id = id;
  }
  if (rule.timestampHeader) {
    const timestamp = soleHeader(rawHeaders, rule.timestampHeader)?.trim();
    if (timestamp === undefined || !TIMESTAMP.test(timestamp)) return 'signature_missing';
    if (Math.abs(nowMs - Number(timestamp) * 1000) > rule.toleranceMs) return 'timestamp_out_of_range';
    headers.timestamp = timestamp;
  }
  return headers;
}

/** Covers the clock's granularity, and the seen-message memory's monotonic clock drifting from the wall clock. */
const SEEN_MESSAGES_MARGIN_MS = 1000;

/**
 * How long a repeat of this message is still let through by its timestamp, from `nowMs`: the
 * seen-message memory (seen-messages.ts) must hold its id that long. A timestamp ahead of the clock is
 * accepted until `timestamp + tolerance`, up to twice the tolerance from now, so remembering it for
 * the tolerance alone would forget it while it is still accepted. Without a timestamp nothing ends
 * a repeat's acceptance; the tolerance is what the memory keeps then.
 */
export function repeatableForMs(rule: SignatureRule, headers: SignedHeaders, nowMs: number): number {
  if (headers.timestamp === undefined) return rule.toleranceMs;
  const acceptedUntilMs = Number(headers.timestamp) * 1000 + rule.toleranceMs;
  return Math.max(0, acceptedUntilMs - nowMs) + SEEN_MESSAGES_MARGIN_MS;
}

export function signatureMatches(sig: CompiledSignature, headers: SignedHeaders, body: Buffer, nowMs: number): boolean {
  const presented = presentedSignatures(sig.rule, headers.signatures);
  if (presented.length === 0) return false;
  for (const { key, notBefore, notAfter } of sig.keys) {
    if (nowMs < notBefore || nowMs > notAfter) continue;
    const expected = hmacOf(sig.rule, key, headers, body);
    // Every presented signature is compared, equal lengths in constant time: what is learned from
    // the time taken is at most how many were sent.
    let match = false;
    for (const candidate of presented)
      if (candidate.length === expected.length && timingSafeEqual(candidate, expected)) match = true;
    if (match) return true;
  }
  return false;
}

/** The HMAC of the signed content: its parts fed in order, the body as the bytes received. */
function hmacOf(rule: SignatureRule, key: KeyObject, headers: SignedHeaders, body: Buffer): Buffer {
  const hmac = createHmac(rule.algorithm, key);
  for (const part of rule.signed) {
    if (part === 'body') hmac.update(body);
    // Header values reach Node as latin1 strings: this gives back the bytes that were sent.
    else if (part === 'timestamp') hmac.update(headers.timestamp as string, 'latin1');
    else if (part === 'id') hmac.update(headers.id as string, 'latin1');
    else hmac.update(part.literal, 'utf8');
  }
  return hmac.digest();
}

/** The signatures the header lists with the scheme's prefix, decoded; malformed ones are dropped. */
function presentedSignatures(rule: SignatureRule, header: string): Buffer[] {
  const items = rule.separator ? header.split(rule.separator) : [header];
  const out: Buffer[] = [];
  for (const item of items.slice(0, MAX_SIGNATURES)) {
    const trimmed = item.trim();
    if (!trimmed.startsWith(rule.prefix)) continue;
    const encoded = trimmed.slice(rule.prefix.length);
    if (rule.encoding === 'hex' ? HEX.test(encoded) : BASE64.test(encoded))
      out.push(Buffer.from(encoded, rule.encoding));
  }
  return out;
}
