/** The intake.dev/v1alpha1 custom resources (crds/ holds their schemas), as TypeScript types. */
import type { V1ObjectMeta } from '@kubernetes/client-node';
import type { MappingSpec } from '../mapping/engine.js';

export const GROUP = 'intake.dev';
export const VERSION = 'v1alpha1';
export const API_VERSION = `${GROUP}/${VERSION}`;

export const ROTATE_ANNOTATION = 'intake.dev/rotate';
export const FINALIZER = 'intake.dev/cleanup';

export interface Condition {
  type: string;
  status: 'True' | 'False' | 'Unknown';
  observedGeneration?: number;
  lastTransitionTime: string;
  reason: string;
  message: string;
}

export interface CommonStatus {
  url?: string;
  credentialsSecret?: string;
  observedGeneration?: number;
  conditions?: Condition[];
}

export interface WebhookIntegration {
  apiVersion: typeof API_VERSION;
  kind: 'WebhookIntegration';
  metadata: V1ObjectMeta;
  spec: {
    name?: string;
    suspend?: boolean;
    credentials?: {
      username?: string;
      secretRef?: { name: string };
      rotationGracePeriod?: string;
    };
    mapping?: MappingSpec;
    /** Destination names configured in the ingester; absent: the default destinations. */
    destinations?: string[];
  };
  status?: CommonStatus & { integrationName?: string };
}

export interface ApiKey {
  apiVersion: typeof API_VERSION;
  kind: 'ApiKey';
  metadata: V1ObjectMeta;
  spec?: {
    username?: string;
    maxSeries?: number;
    suspend?: boolean;
    rotationGracePeriod?: string;
  };
  status?: CommonStatus & { username?: string };
}

export type IntakeResource = WebhookIntegration | ApiKey;

export const PLURALS = { WebhookIntegration: 'webhookintegrations', ApiKey: 'apikeys' } as const;
