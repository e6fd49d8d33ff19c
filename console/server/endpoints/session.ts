/** Signing in and out, and who the page's user is (GET /api/session). */
import type { SessionInfo, SignedIn } from '../../shared/console-api.js';
import type { ConsoleEndpoints } from '../context.js';
import { isRefusal } from '../bounds.js';
import { HttpError } from '../http-error.js';
import { KubeError } from '../kube.js';

export const sessionEndpoints: ConsoleEndpoints = (app, { options, auth }) => {
  app.get('/api/session', async (req): Promise<SessionInfo> => {
    const session = auth.sessionOf(req);
    if (!session) return { mode: options.mode, signedIn: false };
    const user = auth.clientOf(session);
    return {
      mode: options.mode,
      signedIn: true,
      // A proxy's token has no session to remember the name in: ask the API server.
      user: session.user || (await user.whoAmI().catch(() => 'unknown')),
      namespaces: await user.namespaces(),
      defaultNamespace: options.mode === 'kubeconfig' ? auth.identities.defaultNamespace() : 'default',
    };
  });

  /**
   * Starts a session. Kubeconfig mode: with the printed URL's one-time token (spent here). Token
   * mode: with a Kubernetes bearer token the API server accepts. The answer's `session` is the
   * secret the page sends in X-Intake-Session; the cookie set with it is the other half.
   */
  app.post('/api/login', async (req, reply) => {
    const token = String((req.body as { token?: unknown } | undefined)?.token ?? '').trim();
    if (!token)
      throw new HttpError(
        400,
        'token_required',
        options.mode === 'kubeconfig'
          ? 'token: the one-time token of the printed URL'
          : 'token: paste a Kubernetes bearer token',
      );
    // Reserved before the token is checked: the check is the work, and its answer what a guesser wants.
    const attempt = auth.logins.begin(req.ip, token);
    if (isRefusal(attempt)) throw HttpError.of(attempt);
    if (options.mode === 'kubeconfig') {
      if (!auth.oneTime.redeem(token)) {
        attempt.failed();
        throw new HttpError(
          401,
          'token_spent',
          'this console link was already used or is wrong: run `intake console` again for a new one',
        );
      }
      attempt.succeeded('kubeconfig');
      return reply.send({
        user: 'kubeconfig',
        session: auth.startSession(req, reply, { user: 'kubeconfig' }),
      } satisfies SignedIn);
    }
    let user: string;
    try {
      user = await auth.identities.forToken(token).whoAmI();
    } catch (err) {
      const e = KubeError.from(err);
      if (e.status !== 401) {
        attempt.abandoned();
        throw e;
      }
      attempt.failed();
      throw new HttpError(401, 'token_refused', `the Kubernetes API server did not accept this token: ${e.message}`);
    }
    const tooOften = attempt.succeeded(user);
    if (tooOften) throw HttpError.of(tooOften);
    return reply.send({ user, session: auth.startSession(req, reply, { kubeToken: token, user }) } satisfies SignedIn);
  });

  app.post('/api/logout', async (req, reply) => {
    auth.endSession(req, reply);
    return reply.send({});
  });
};
