/**
 * Integrations and API keys as Kubernetes objects, read and written as the user (create, replace,
 * patch: suspend and rotate, delete), and their credentials revealed when the user's own token may
 * read the Secret (credentials.ts).
 */
import type { ConsoleEndpoints } from '../context.js';
import { readCredentials } from '../credentials.js';
import { gitOpsOwner, type ObjectMeta } from '../../shared/gitops.js';
import { HttpError } from '../http-error.js';
import { KINDS, type Plural, type UserClient } from '../kube.js';
import { objectBody, targetOf } from '../request.js';

/**
 * An object Argo CD or Flux manages is not changed here, whatever the page showed: the next sync
 * would undo it (docs/console.md). Read as the user, just before the write.
 */
async function refuseGitOpsManaged(user: UserClient, ns: string, plural: Plural, name: string): Promise<void> {
  const current = await user.get(ns, plural, name);
  const owner = gitOpsOwner(current.metadata as ObjectMeta | undefined);
  if (owner)
    throw new HttpError(
      409,
      'gitops_managed',
      `${KINDS[plural]} ${ns}/${name} is managed by ${owner.tool} (${owner.owner}): change it in Git. The console does not edit, rotate, suspend or delete it, since the next sync would undo that.`,
    );
}

export const resourceEndpoints: ConsoleEndpoints = (app, { auth }) => {
  const object = '/api/namespaces/:ns/:plural/:name';
  app.get(object, async (req) => {
    const { ns, plural, name } = targetOf(req);
    return auth.userOf(req).get(ns, plural, name);
  });
  app.post('/api/namespaces/:ns/:plural', async (req, reply) => {
    const { ns, plural } = targetOf(req);
    return reply.code(201).send(await auth.userOf(req).create(ns, plural, objectBody(req)));
  });
  app.put(object, async (req) => {
    const { ns, plural, name } = targetOf(req);
    const user = auth.userOf(req);
    const body = objectBody(req);
    await refuseGitOpsManaged(user, ns, plural, name);
    return user.replace(ns, plural, name, body);
  });
  app.patch(object, async (req) => {
    const { ns, plural, name } = targetOf(req);
    const user = auth.userOf(req);
    const body = objectBody(req);
    await refuseGitOpsManaged(user, ns, plural, name);
    return user.patch(ns, plural, name, body);
  });
  app.delete(object, async (req) => {
    const { ns, plural, name } = targetOf(req);
    const user = auth.userOf(req);
    await refuseGitOpsManaged(user, ns, plural, name);
    await user.delete(ns, plural, name);
    return {};
  });
  app.get(`${object}/credentials`, async (req) => {
    const { ns, plural, name } = targetOf(req);
    return readCredentials(auth.userOf(req), ns, plural, name);
  });
};
