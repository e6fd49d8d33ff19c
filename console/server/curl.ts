/**
 * "Copy as curl": the console's test event as a POSIX shell command that sends the same request.
 * A signed integration's signature is computed when the command runs, by openssl, from the
 * scheme's rule (api/signatures.ts: what is signed, how, in which header), with a fresh timestamp
 * and message id, as docs/signatures.md's examples do. A secret the console may not read is left to
 * the shell as "$PASSWORD" or "$SIGNING_SECRET". No comments: zsh does not take them at its prompt.
 */
import type { SignatureRule } from '../../api/signatures.js';

export interface CurlRequest {
  url: string;
  payload: string;
  /** Basic credentials; without the password, the command reads $PASSWORD. */
  basic?: { username: string; password?: string };
  /** A signature per `rule`; without the secret, the command reads $SIGNING_SECRET. */
  signature?: { rule: SignatureRule; secret?: string };
}

/** A POSIX-shell single-quoted word. */
export const shellQuote = (s: string): string => `'${s.replace(/'/g, `'\\''`)}'`;

/** Text for inside a double-quoted word: the four characters the shell still reads there, escaped. */
const inDoubleQuotes = (s: string): string => s.replace(/[\\"$`]/g, (c) => `\\${c}`);

/** printf's format for literal text: % and \ escaped. */
const printfLiteral = (s: string): string => s.replace(/\\/g, '\\\\').replace(/%/g, '%%');

/** The bytes of stdin as lower-case hex on one line. */
const TO_HEX = "od -An -v -tx1 | tr -d ' \\n'";

export function curlCommand(req: CurlRequest): string {
  const lines: string[] = [];
  const curl: string[] = ['curl -sS'];
  if (req.basic) {
    const { username, password } = req.basic;
    // 'user:'"$PASSWORD": the shell joins the quoted name and the expanded variable into one word.
    curl.push(
      `-u ${password === undefined ? `${shellQuote(`${username}:`)}"$PASSWORD"` : shellQuote(`${username}:${password}`)}`,
    );
  }
  curl.push("-H 'Content-Type: application/json'");
  if (!req.signature) {
    return `${curl.join(' ')} \\\n  --data-binary ${shellQuote(req.payload)} \\\n  ${shellQuote(req.url)}`;
  }
  const { rule, secret } = req.signature;
  lines.push(`SECRET=${secret === undefined ? '"$SIGNING_SECRET"' : shellQuote(secret)}`);
  lines.push(`BODY=${shellQuote(req.payload)}`);
  const signs = (part: 'id' | 'timestamp') => rule.signed.includes(part);
  if (rule.idHeader || signs('id')) lines.push(`ID=console_$(od -An -N8 -tx1 /dev/urandom | tr -d ' \\n')`);
  if (rule.timestampHeader || signs('timestamp')) lines.push('TS=$(date +%s)');
  // The HMAC key as hex: a Standard Webhooks secret is base64 after whsec_, any other is used as written.
  lines.push(
    rule.scheme === 'standard-webhooks'
      ? `KEY=$(printf '%s' "\${SECRET#whsec_}" | openssl base64 -d -A | ${TO_HEX})`
      : `KEY=$(printf '%s' "$SECRET" | ${TO_HEX})`,
  );
  const format = rule.signed.map((part) => (typeof part === 'string' ? '%s' : printfLiteral(part.literal))).join('');
  const args = rule.signed
    .filter((part): part is 'id' | 'timestamp' | 'body' => typeof part === 'string')
    .map((part) => ({ id: '"$ID"', timestamp: '"$TS"', body: '"$BODY"' })[part]);
  const encode = rule.encoding === 'base64' ? 'openssl base64 -A' : TO_HEX;
  lines.push(
    `SIG=$(printf ${shellQuote(format)} ${args.join(' ')} | openssl dgst -${rule.algorithm} -mac HMAC -macopt "hexkey:$KEY" -binary | ${encode})`,
  );
  const headers = [
    ...(rule.idHeader ? [`-H "${inDoubleQuotes(rule.idHeader)}: $ID"`] : []),
    ...(rule.timestampHeader ? [`-H "${inDoubleQuotes(rule.timestampHeader)}: $TS"`] : []),
    `-H "${inDoubleQuotes(rule.header)}: ${inDoubleQuotes(rule.prefix)}$SIG"`,
  ];
  lines.push(`${curl.join(' ')} \\\n  ${headers.join(' ')} \\\n  --data-binary "$BODY" \\\n  ${shellQuote(req.url)}`);
  return lines.join('\n');
}
