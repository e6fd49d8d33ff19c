/**
 * What a state-changing call to the ingester's admin listener carries (ingester/http/admin-guard.ts):
 * the custom header and a JSON object body, which a cross-site page cannot send without a preflight.
 */
export const ADMIN_WRITE_HEADERS = { 'content-type': 'application/json', 'x-intake-admin': 'true' } as const;

/** fetch() options of an admin POST with these filters (or none) in its JSON body. */
export const adminPost = (body: Record<string, unknown> = {}): RequestInit => ({
  method: 'POST',
  headers: ADMIN_WRITE_HEADERS,
  body: JSON.stringify(body),
});
