/**
 * @jest-environment jsdom
 */
// The cluster panel's polling (src/clusterpoll.ts) under jest's fake clock: its pace, its
// standby while the panel or the browser tab is hidden, its backoff after failed requests,
// refresh on demand and disposal.

import { BACKOFF_MAX_MS, ClusterPoll, REFRESH_MS } from '../clusterpoll';
import { IClusterInfo, IClusterList } from '../clusterview';

const LIST: IClusterList = {
  version: 1,
  clusters: [{ id: 'c1', state: 'running' } as IClusterInfo]
};

/** A poll whose requests are recorded (their times) and answered as `answer` says. */
function harness() {
  const h = {
    shown: true,
    answer: (): Promise<IClusterList> => Promise.resolve(LIST),
    requests: [] as number[],
    lists: [] as IClusterInfo[][],
    errors: [] as { message: string; retryMs: number; at: number }[],
    poll: null as unknown as ClusterPoll
  };
  h.poll = new ClusterPoll({
    request: () => {
      h.requests.push(Date.now());
      return h.answer();
    },
    isShown: () => h.shown,
    onList: clusters => h.lists.push(clusters),
    onError: (reason, retryMs) =>
      h.errors.push({ message: (reason as Error).message, retryMs, at: Date.now() })
  });
  return h;
}

/** Runs what is due now: the fake clock runs a zero-delay timer set by a timer 1 ms later. */
async function settle(): Promise<void> {
  await jest.advanceTimersByTimeAsync(SETTLE_MS);
}

function gaps(times: number[]): number[] {
  return times.slice(1).map((t, i) => t - times[i]);
}

function setTabHidden(hidden: boolean): void {
  Object.defineProperty(document, 'visibilityState', {
    configurable: true,
    get: () => (hidden ? 'hidden' : 'visible')
  });
  document.dispatchEvent(new Event('visibilitychange'));
}

const SETTLE_MS = 5;

let polls: ClusterPoll[] = [];

beforeEach(() => {
  jest.useFakeTimers();
  polls = [];
});

afterEach(() => {
  polls.forEach(p => p.dispose());
  setTabHidden(false);
  jest.restoreAllMocks();
  jest.useRealTimers();
});

function start() {
  const h = harness();
  polls.push(h.poll);
  return h;
}

describe('cluster panel polling', () => {
  it('asks at once, then about once a second, and hands each list on', async () => {
    const h = start();
    await settle();
    expect(h.requests).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(5 * REFRESH_MS);
    expect(h.requests).toHaveLength(6);
    expect(gaps(h.requests)).toEqual(Array(5).fill(REFRESH_MS));
    expect(h.lists).toHaveLength(6);
    expect(h.lists[0]).toEqual(LIST.clusters);
    expect(h.errors).toEqual([]);
  });

  it('stands by while the panel is hidden, and asks at once when refreshed on show', async () => {
    const h = start();
    h.shown = false;
    await jest.advanceTimersByTimeAsync(10 * REFRESH_MS);
    expect(h.requests).toHaveLength(0);
    h.shown = true;
    h.poll.refresh();
    await settle();
    expect(h.requests).toHaveLength(1);
    await jest.advanceTimersByTimeAsync(REFRESH_MS);
    expect(h.requests).toHaveLength(2);
  });

  it('stands by while the browser tab is hidden', async () => {
    const h = start();
    await settle();
    setTabHidden(true);
    await jest.advanceTimersByTimeAsync(20 * REFRESH_MS);
    // Lumino's poll lingers for one tick before it stands by
    expect(h.requests.length).toBeLessThanOrEqual(2);
    const before = h.requests.length;
    setTabHidden(false);
    await jest.advanceTimersByTimeAsync(2 * REFRESH_MS);
    expect(h.requests.length).toBeGreaterThan(before);
  });

  it('backs off after failures, says how long it waits, and resumes its pace', async () => {
    jest.spyOn(Math, 'random').mockReturnValue(0.5); // Lumino draws each wait at random
    const h = start();
    h.answer = () => Promise.reject(new Error('HTTP 503'));
    await jest.advanceTimersByTimeAsync(4 * 60 * 1000);
    const waits = gaps(h.requests);
    // each failure reports the wait until the next request
    expect(h.errors.slice(0, waits.length).map(e => e.retryMs)).toEqual(waits);
    expect(h.errors[0].message).toBe('HTTP 503');
    // the waits grow up to the cap, and stay there
    const growing = waits.slice(0, waits.indexOf(BACKOFF_MAX_MS));
    expect(growing.length).toBeGreaterThan(3);
    growing.slice(1).forEach((w, i) => expect(w).toBeGreaterThan(growing[i]));
    expect(Math.max(...waits)).toBe(BACKOFF_MAX_MS);
    expect(waits.slice(-3)).toEqual(Array(3).fill(BACKOFF_MAX_MS));
    // a quarter of an hour of 1 s polls would be 240 requests
    expect(h.requests.length).toBeLessThan(20);

    h.answer = () => Promise.resolve(LIST);
    h.poll.refresh();
    await jest.advanceTimersByTimeAsync(3 * REFRESH_MS);
    expect(h.lists.length).toBe(4);
    expect(gaps(h.requests.slice(-4))).toEqual(Array(3).fill(REFRESH_MS));
  });

  it('refresh asks now, in the middle of a wait', async () => {
    const h = start();
    await settle();
    await jest.advanceTimersByTimeAsync(300);
    expect(h.requests).toHaveLength(1);
    h.poll.refresh();
    await settle();
    expect(h.requests).toHaveLength(2);
    expect(h.requests[1] - h.requests[0]).toBeLessThanOrEqual(300 + SETTLE_MS);
  });

  it('an answer without a cluster list is an error', async () => {
    const h = start();
    h.answer = () => Promise.resolve({ version: 1 } as unknown as IClusterList);
    await settle();
    expect(h.lists).toEqual([]);
    expect(h.errors.map(e => e.message)).toEqual([
      'unexpected answer from the tfjupyter server extension'
    ]);
  });

  it('asks nothing more once disposed', async () => {
    const h = start();
    await jest.advanceTimersByTimeAsync(REFRESH_MS);
    const before = h.requests.length;
    h.poll.dispose();
    expect(h.poll.isDisposed).toBe(true);
    h.poll.refresh();
    await jest.advanceTimersByTimeAsync(10 * REFRESH_MS);
    expect(h.requests).toHaveLength(before);
  });
});
