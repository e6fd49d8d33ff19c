/**
 * Views: which page the address's hash shows (#/ns/<namespace>/...). main.tsx lists them, one
 * line each; a view's path names its parameters (`ns/:ns/:plural/:name`), which its page gets.
 */
import type { ComponentType } from 'preact';
import type { SessionInfo } from '../shared/console-api.js';
import type { LiveState } from './data/live.js';

/** What every page is given: the address's parameters (decoded), the namespace's live lists, the session. */
export interface ViewProps<P extends string = string> {
  params: Readonly<Record<P, string>>;
  live: LiveState;
  session: SessionInfo;
}

/** The parameters a path names: 'ns/:ns/:plural' gives 'ns' | 'plural'. */
type ParamsOf<Path extends string> = Path extends `${infer Head}/${infer Rest}`
  ? ParamsOf<Head> | ParamsOf<Rest>
  : Path extends `:${infer Name}`
    ? Name
    : never;

export interface View {
  /** The address after `#/`, its parameters written `:name`. */
  path: string;
  page: ComponentType<ViewProps>;
}

/** A view whose page is typed by the parameters its path names. */
export const view = <Path extends string>(path: Path, page: ComponentType<ViewProps<ParamsOf<Path>>>): View => ({
  path,
  page: page as ComponentType<ViewProps>,
});

export interface MatchedView {
  view: View;
  params: Record<string, string>;
}

/** The view for an address: of the views whose path fits, the one with the most fixed segments. */
export function matchView(views: readonly View[], hash: string): MatchedView | undefined {
  const parts = hash.replace(/^#\/?/, '').split('/').filter(Boolean).map(safeDecode);
  let best: { view: View; params: Record<string, string>; fixed: number } | undefined;
  for (const v of views) {
    const fit = fitOf(v.path, parts);
    if (fit && (!best || fit.fixed > best.fixed)) best = { view: v, ...fit };
  }
  return best && { view: best.view, params: best.params };
}

/** The parameters `parts` give the path's, and how many of its segments are fixed; undefined if it does not fit. */
function fitOf(path: string, parts: string[]): { params: Record<string, string>; fixed: number } | undefined {
  const segments = path.split('/');
  if (segments.length !== parts.length) return undefined;
  const params: Record<string, string> = {};
  let fixed = 0;
  for (const [i, segment] of segments.entries()) {
    const part = parts[i] as string;
    if (segment.startsWith(':')) params[segment.slice(1)] = part;
    else if (segment === part) fixed++;
    else return undefined;
  }
  return { params, fixed };
}

function safeDecode(part: string): string {
  try {
    return decodeURIComponent(part);
  } catch {
    return part;
  }
}
