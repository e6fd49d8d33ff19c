/** The operator's writes to the API server, each one idempotent and skipped when nothing differs. */
import {
  CoreV1Api,
  CustomObjectsApi,
  setHeaderOptions,
  type V1ObjectMeta,
  type V1Secret,
} from '@kubernetes/client-node';
import { GROUP, PLURALS, VERSION } from '../api/v1alpha1/types.js';
import { inertText } from '../common/sender-text.js';

/** Any of our custom resources (status and Events are written the same way for each). */
type CustomResource = { apiVersion: string; kind: keyof typeof PLURALS; metadata: V1ObjectMeta };
import { statusOf } from '../kube/config.js';

const MERGE_PATCH = setHeaderOptions('Content-Type', 'application/merge-patch+json');
const JSON_PATCH = setHeaderOptions('Content-Type', 'application/json-patch+json');

export class Writer {
  constructor(
    private readonly core: CoreV1Api,
    private readonly custom: CustomObjectsApi,
  ) {}

  /**
   * Creates or replaces a Secret so its labels, annotations, owners and data are exactly `desired`'s.
   * Returns the Secret as written, or undefined when it already matched.
   */
  async applySecret(desired: V1Secret, existing: V1Secret | undefined): Promise<V1Secret | undefined> {
    const namespace = desired.metadata?.namespace as string;
    if (!existing) return this.core.createNamespacedSecret({ namespace, body: desired });
    if (secretMatches(desired, existing)) return undefined;
    const body: V1Secret = {
      ...desired,
      metadata: { ...desired.metadata, resourceVersion: existing.metadata?.resourceVersion },
    };
    return this.core.replaceNamespacedSecret({ namespace, name: desired.metadata?.name as string, body });
  }

  async deleteSecret(namespace: string, name: string): Promise<void> {
    try {
      await this.core.deleteNamespacedSecret({ namespace, name });
    } catch (err) {
      if (statusOf(err) !== 404) throw err;
    }
  }

  async readSecret(namespace: string, name: string): Promise<V1Secret | undefined> {
    try {
      return await this.core.readNamespacedSecret({ namespace, name });
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  /** The resource as the API server has it now (a quorum read, not the cache), or undefined when it is gone. */
  async readCustom(kind: keyof typeof PLURALS, namespace: string, name: string): Promise<CustomResource | undefined> {
    try {
      return (await this.custom.getNamespacedCustomObject({
        group: GROUP,
        version: VERSION,
        plural: PLURALS[kind],
        namespace,
        name,
      })) as CustomResource;
    } catch (err) {
      if (statusOf(err) === 404) return undefined;
      throw err;
    }
  }

  /** Returns the resource as written. */
  async patchStatus(obj: CustomResource, status: object): Promise<CustomResource> {
    return (await this.custom.patchNamespacedCustomObjectStatus(
      {
        group: GROUP,
        version: VERSION,
        plural: PLURALS[obj.kind],
        namespace: obj.metadata.namespace as string,
        name: obj.metadata.name as string,
        body: { status },
      },
      MERGE_PATCH,
    )) as CustomResource;
  }

  /**
   * Replaces status.activity whole (a merge patch would keep reasons no longer counted), leaving
   * the rest of the status to the reconciles. A resource with no status yet gets it by merge patch.
   */
  async replaceActivity(obj: CustomResource & { status?: object }, activity: object): Promise<void> {
    await this.replaceStatusField(obj, 'activity', activity);
  }

  /** Replaces one field of the status whole (status.activity, a Destination's status.delivery), leaving the rest. */
  async replaceStatusField(
    obj: CustomResource & { status?: object },
    field: 'activity' | 'delivery',
    value: object,
  ): Promise<void> {
    const target = {
      group: GROUP,
      version: VERSION,
      plural: PLURALS[obj.kind],
      namespace: obj.metadata.namespace as string,
      name: obj.metadata.name as string,
    };
    if (!obj.status) {
      await this.custom.patchNamespacedCustomObjectStatus(
        { ...target, body: { status: { [field]: value } } },
        MERGE_PATCH,
      );
      return;
    }
    await this.custom.patchNamespacedCustomObjectStatus(
      { ...target, body: [{ op: 'add', path: `/status/${field}`, value }] },
      JSON_PATCH,
    );
  }

  async recordEvent(obj: CustomResource, type: 'Normal' | 'Warning', reason: string, message: string): Promise<void> {
    const now = new Date();
    const namespace = obj.metadata.namespace as string;
    await this.core.createNamespacedEvent({
      namespace,
      body: {
        metadata: { namespace, generateName: `${obj.metadata.name}.` },
        involvedObject: {
          apiVersion: obj.apiVersion,
          kind: obj.kind,
          name: obj.metadata.name,
          namespace,
          uid: obj.metadata.uid,
          resourceVersion: obj.metadata.resourceVersion,
        },
        type,
        reason,
        message: inertText(message, 1024),
        source: { component: 'intake-operator' },
        reportingComponent: 'intake.dev/operator',
        reportingInstance: process.env.HOSTNAME ?? 'intake-operator',
        firstTimestamp: now,
        lastTimestamp: now,
        count: 1,
      },
    });
  }
}

const sameMap = (a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean => {
  const ka = Object.keys(a ?? {});
  return ka.length === Object.keys(b ?? {}).length && ka.every((k) => a?.[k] === b?.[k]);
};

function secretMatches(desired: V1Secret, existing: V1Secret): boolean {
  const owners = (s: V1Secret) => JSON.stringify((s.metadata?.ownerReferences ?? []).map((o) => o.uid));
  return (
    sameMap(desired.data, existing.data) &&
    sameMap(desired.metadata?.labels, existing.metadata?.labels) &&
    sameMap(desired.metadata?.annotations, existing.metadata?.annotations) &&
    owners(desired) === owners(existing)
  );
}
