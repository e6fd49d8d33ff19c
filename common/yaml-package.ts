/**
 * The `yaml` package, loaded on first use. Importing it costs a process about 8 MiB of RSS (its
 * code, compiled), which every replica would pay for nothing: config files and kubeconfigs are
 * almost always plain YAML, read by common/plain-yaml.ts, and only `-o yaml` output or a file the
 * plain reader declines needs the full parser. Loaded synchronously (the package is CommonJS), so
 * the callers stay synchronous and the first use pays only the one-time load (tens of ms).
 */
import { createRequire } from 'node:module';
import type * as Yaml from 'yaml';

const requireHere = createRequire(import.meta.url);
let loaded: typeof Yaml | undefined;

export const yamlPackage = (): typeof Yaml => (loaded ??= requireHere('yaml') as typeof Yaml);
