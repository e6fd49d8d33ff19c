/** Which page the address's hash shows (console/web/views.ts): the view whose path fits best. */
import type { ComponentType } from 'preact';
import { matchView, view, type ViewProps } from '../../../console/web/views.js';

const page = (name: string) => Object.assign((() => null) as ComponentType<ViewProps>, { displayName: name });
const list = view('ns/:ns', page('list'));
const detail = view('ns/:ns/:plural/:name', page('detail'));
const created = view('ns/:ns/new/:plural', page('new'));
const destination = view('ns/:ns/destinations/:name', page('destination'));
const VIEWS = [list, detail, created, destination];

describe('matchView', () => {
  it('gives each parameter its decoded part of the address', () => {
    expect(matchView(VIEWS, '#/ns/team%20a/webhookintegrations/alerts%2Fx')).toEqual({
      view: detail,
      params: { ns: 'team a', plural: 'webhookintegrations', name: 'alerts/x' },
    });
    expect(matchView(VIEWS, '#/ns/team')).toEqual({ view: list, params: { ns: 'team' } });
  });

  it('prefers the path with more fixed segments, whatever the order of the list', () => {
    expect(matchView(VIEWS, '#/ns/team/new/apikeys')?.view).toBe(created);
    expect(matchView(VIEWS, '#/ns/team/destinations/pager')?.view).toBe(destination);
    expect(matchView([...VIEWS].reverse(), '#/ns/team/new/apikeys')?.view).toBe(created);
  });

  it('matches nothing for the first page, another length or a wrong fixed segment', () => {
    expect(matchView(VIEWS, '')).toBeUndefined();
    expect(matchView(VIEWS, '#/')).toBeUndefined();
    expect(matchView(VIEWS, '#/ns/team/apikeys')).toBeUndefined();
    expect(matchView(VIEWS, '#/namespaces/team')).toBeUndefined();
  });

  it('keeps a part that is not valid percent-encoding as it is', () => {
    expect(matchView(VIEWS, '#/ns/50%')?.params).toEqual({ ns: '50%' });
  });
});
