import type { RouteChange, RouteInput, SkippedRoute } from './route-table.js';

/** Where routes come from: the YAML file (standalone) or route Secrets (Kubernetes mode). */
export interface RouteSource {
  readonly allowPlaintext: boolean;
  /**
   * Calls onRoutes with every complete set of routes (and the documents it could not parse), the
   * first time before start resolves (having awaited it); onError when a new set could not be read
   * at all. onRoutes may install the set in steps (a promise): the caller keeps sets in order.
   */
  start(handlers: {
    onRoutes(inputs: RouteInput[], unparsable?: SkippedRoute[]): void | Promise<void>;
    /**
     * Optional: changes to single route documents since the last set or changes (each change's
     * document unparsable, when it is, is in `unparsable`). `all` gives the complete set, for a
     * change that cannot be applied alone. Without it, every change comes as a set to onRoutes.
     */
    onChanges?(
      changes: RouteChange[],
      unparsable: SkippedRoute[],
      all: () => { inputs: RouteInput[]; unparsable: SkippedRoute[] },
    ): void | Promise<void>;
    onError(err: Error): void;
  }): Promise<void>;
  stop(): Promise<void>;
}
