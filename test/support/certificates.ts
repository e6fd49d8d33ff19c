/** Self-signed certificates for tests' HTTPS servers on loopback (openssl, from the Debian image). */
import { execFileSync } from 'node:child_process';
import { join } from 'node:path';

/**
 * Writes `<name>.crt` and `<name>.key` in `dir`: an EC P-256 certificate valid for a day, for
 * 127.0.0.1 unless `loopback` is false (then it names no address, so no client accepts it for one).
 */
export function selfSignedCertificate(dir: string, name: string, loopback = true): { cert: string; key: string } {
  const [cert, key] = [join(dir, `${name}.crt`), join(dir, `${name}.key`)];
  const args = ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes'];
  args.push('-keyout', key, '-out', cert, '-days', '1', '-subj', `/CN=${name}`);
  if (loopback) args.push('-addext', 'subjectAltName=IP:127.0.0.1');
  execFileSync('openssl', args, { stdio: 'ignore' });
  return { cert, key };
}
