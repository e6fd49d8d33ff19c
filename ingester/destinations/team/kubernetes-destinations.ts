/**
 * Kubernetes mode: the teams' destinations, from the Secrets labelled intake.dev/destination=true
 * that the operator publishes in the ingester's own namespace (one per `Destination` resource:
 * api/destination-document.ts), as route documents are (routing/kubernetes-source.ts). The
 * ingester reads no other namespace: the operator copied the credentials into the document.
 *
 * Every change (created, updated, deleted), coalesced over a moment, hands the whole set to the
 * delivery (set-up-destinations.ts setTeamDestinations), which adds, replaces and removes
 * destinations while running. A document that cannot be read is skipped and logged (its
 * destination, if it had an earlier version, is removed: what it says now cannot be delivered).
 * A document is parsed once per resourceVersion; its credentials are written to files then.
 */
import type { V1Secret } from '@kubernetes/client-node';
import type { Logger } from 'pino';
import { DESTINATION_LABEL, DESTINATION_SECRET_KEY } from '../../../api/destination-document.js';
import type { KubeApiClient } from '../../../kube/api-client.js';
import { Informer } from '../../../kube/informer.js';
import type { TeamDestination } from '../set-up-destinations.js';
import { checkDestinationDocument, TeamCredentialFiles, teamDestinationSettings } from './team-destination.js';

/** Coalesces bursts (a team applying several destinations at once) into one update. */
const APPLY_DELAY_MS = 50;

/** Where the teams' destinations come from (the operator's documents; tests may hand them over directly). */
export interface TeamDestinationSource {
  /** Hands every set of team destinations to `apply`; resolves after the first. */
  start(apply: (team: TeamDestination[]) => Promise<void>): Promise<void>;
  stop(): void;
  removeFiles(): void;
}

export class KubernetesDestinationSource implements TeamDestinationSource {
  private informer?: Informer<V1Secret>;
  private timer?: NodeJS.Timeout;
  private readonly parsed = new Map<string, { version: string; destination?: TeamDestination }>();
  private readonly files = new TeamCredentialFiles();

  constructor(
    private readonly api: KubeApiClient,
    private readonly namespace: string,
    private readonly logger: Logger,
  ) {}

  /** Resolves after the first list was handed over. */
  async start(apply: (team: TeamDestination[]) => Promise<void>): Promise<void> {
    const labelSelector = `${DESTINATION_LABEL}=true`;
    const watchPath = `/api/v1/namespaces/${encodeURIComponent(this.namespace)}/secrets`;
    const handOver = (): Promise<void> => {
      this.timer = undefined;
      return apply(this.all()).catch((err: Error) =>
        this.logger.error({ err: { message: err.message } }, 'team destinations not applied'),
      );
    };
    this.informer = new Informer<V1Secret>({
      name: 'destination-secrets',
      watcher: this.api,
      logger: this.logger,
      labelSelector,
      watchPath,
      list: () => this.api.list<V1Secret>(watchPath, { labelSelector }),
      keep: (secret) => ({
        metadata: {
          name: secret.metadata?.name,
          namespace: secret.metadata?.namespace,
          resourceVersion: secret.metadata?.resourceVersion,
        },
      }),
      onEvent: (secret, old) => {
        const name = (secret ?? old)?.metadata?.name ?? '';
        const previous = this.parsed.get(name);
        if (secret) {
          const version = secret.metadata?.resourceVersion ?? '';
          if (previous?.version === version) return;
          this.parsed.set(name, this.parse(secret, version));
        } else this.parsed.delete(name);
        if (!this.informer?.hasSynced) return;
        this.timer ??= setTimeout(() => void handOver(), APPLY_DELAY_MS);
      },
    });
    this.informer.start();
    await this.informer.waitForSync();
    await handOver();
  }

  private all(): TeamDestination[] {
    return [...this.parsed.values()].flatMap((p) => (p.destination ? [p.destination] : []));
  }

  private parse(secret: V1Secret, version: string): { version: string; destination?: TeamDestination } {
    const source = `secret ${this.namespace}/${secret.metadata?.name ?? ''}`;
    const credentials = this.files.version();
    try {
      const encoded = secret.data?.[DESTINATION_SECRET_KEY];
      if (!encoded) throw new Error(`has no ${DESTINATION_SECRET_KEY} key`);
      let doc: unknown;
      try {
        doc = JSON.parse(Buffer.from(encoded, 'base64').toString('utf8'));
      } catch {
        // JSON.parse's message quotes the text, which holds credentials.
        throw new Error(`${DESTINATION_SECRET_KEY} is not valid JSON`);
      }
      const settings = teamDestinationSettings(checkDestinationDocument(doc), credentials.write);
      return { version, destination: { settings, version, release: credentials.remove } };
    } catch (err) {
      credentials.remove();
      this.logger.error(
        { source, err: { message: (err as Error).message } },
        'team destination skipped: its document cannot be delivered to',
      );
      return { version };
    }
  }

  /** Stops watching; the destinations keep delivering (and reading their credential files) until closed. */
  stop(): void {
    if (this.timer) clearTimeout(this.timer);
    this.informer?.stop();
  }

  /** Once no destination delivers any more: their credential files go. */
  removeFiles(): void {
    this.files.close();
  }
}
