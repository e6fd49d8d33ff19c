/** A user's client remembers who it is (console/server/kube.ts): the per-user bounds key on that name. */
import { KubeConfig } from '@kubernetes/client-node';
import { UserClient } from '../../../console/server/kube.js';

function client(): UserClient {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'c', server: 'https://127.0.0.1:1' }],
    users: [{ name: 'u', token: 't' }],
    contexts: [{ name: 'x', cluster: 'c', user: 'u' }],
    currentContext: 'x',
  });
  return new UserClient(kc);
}

describe('UserClient.userName', () => {
  it('asks the API server once for requests that come together, and remembers the answer', async () => {
    const c = client();
    let asked = 0;
    let answer: (name: string) => void = () => undefined;
    c.whoAmI = () => {
      asked++;
      return new Promise<string>((resolve) => (answer = resolve)).then((name) => (c.confirmedName = name));
    };
    expect(c.asking).toBe(false);
    const first = c.userName();
    const second = c.userName();
    expect(c.asking).toBe(true);
    answer('system:serviceaccount:a:alice');
    expect(await first).toBe('system:serviceaccount:a:alice');
    expect(await second).toBe('system:serviceaccount:a:alice');
    expect(c.asking).toBe(false);
    expect(await c.userName()).toBe('system:serviceaccount:a:alice');
    expect(asked).toBe(1);
  });

  it('asks again after a failure (a refused token is not remembered as anyone)', async () => {
    const c = client();
    let asked = 0;
    c.whoAmI = () => (++asked === 1 ? Promise.reject(new Error('401')) : Promise.resolve('bob'));
    await expect(c.userName()).rejects.toThrow('401');
    expect(c.asking).toBe(false);
    expect(await c.userName()).toBe('bob');
    expect(asked).toBe(2);
  });
});
