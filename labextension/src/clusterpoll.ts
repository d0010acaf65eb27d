// How the cluster panel keeps its list fresh: Lumino's Poll (as JupyterLab's own running-
// sessions panel, ipyparallel's and dask's panels do) asks for the list about once a second,
// backs off after failed requests, and stands by while the panel is not on screen or the
// browser tab is hidden. No JupyterLab imports, so jest tests it under jsdom.

import { IPoll, Poll } from '@lumino/polling';

import { IClusterInfo, IClusterList } from './clusterview';

/** The pace while requests succeed. */
export const REFRESH_MS = 1000;
/** The longest wait between failed requests (each wait is up to 3 times the last). */
export const BACKOFF_MAX_MS = 30000;

export namespace ClusterPoll {
  export interface IOptions {
    /** Asks the server for the cluster list. */
    request: () => Promise<IClusterList>;
    /** Whether the panel is on screen (false while it, or its sidebar, is collapsed). */
    isShown: () => boolean;
    /** A fresh list arrived. */
    onList: (clusters: IClusterInfo[]) => void;
    /** A request failed; the next one goes out in `retryMs`. */
    onError: (reason: unknown, retryMs: number) => void;
  }
}

/** Polls the cluster list for the panel, from construction until disposed. */
export class ClusterPoll {
  constructor(options: ClusterPoll.IOptions) {
    this._options = options;
    this._poll = new Poll<IClusterList, unknown>({
      name: 'tfjupyter:clusters',
      factory: () => this._request(),
      frequency: { interval: REFRESH_MS, backoff: true, max: BACKOFF_MAX_MS },
      // a hidden panel stands by; a shown one stands by while the browser tab is hidden
      standby: () => (options.isShown() ? 'when-hidden' : true)
    });
    this._poll.ticked.connect(this._onTick, this);
  }

  get isDisposed(): boolean {
    return this._poll.isDisposed;
  }

  /** Asks now (dropping the answer of a request in flight), then keeps the usual pace. */
  refresh(): void {
    void this._poll.refresh();
  }

  dispose(): void {
    this._poll.dispose();
  }

  private async _request(): Promise<IClusterList> {
    const data = await this._options.request();
    if (!data || !Array.isArray(data.clusters)) {
      throw new Error('unexpected answer from the tfjupyter server extension');
    }
    return data;
  }

  private _onTick(
    _: Poll<IClusterList, unknown>,
    state: IPoll.State<IClusterList, unknown, 'standby'>
  ): void {
    if (state.phase === 'resolved' || state.phase === 'reconnected') {
      this._options.onList((state.payload as IClusterList).clusters);
    } else if (state.phase === 'rejected') {
      this._options.onError(state.payload, state.interval);
    }
  }

  private _options: ClusterPoll.IOptions;
  private _poll: Poll<IClusterList, unknown>;
}
