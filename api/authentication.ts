/**
 * How a WebhookIntegration's senders prove who they are (docs/signatures.md): the names alone, in
 * a module that imports nothing, so the console's browser code can take them too. A route
 * document's types (route-document.ts) re-export them.
 */
export type AuthenticationMode = 'basic' | 'signature' | 'basic+signature';
export type SignatureScheme = 'standard-webhooks' | 'github' | 'grafana' | 'slack' | 'pagerduty' | 'hmac';
