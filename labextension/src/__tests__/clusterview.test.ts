/**
 * @jest-environment jsdom
 */
// The cluster panel's rows (src/clusterview.ts) in jsdom: the Stop button's states and the
// code the Dashboard button runs.

import { ClusterView, dashboardCode, IClusterActions, IClusterInfo } from '../clusterview';

const ID = '3f2a9c0d1e2b4a5f8e7d6c5b4a392817';

function cluster(extra: Partial<IClusterInfo> = {}): IClusterInfo {
  return {
    id: ID,
    created: 1700000000,
    state: 'running',
    engines: 'local',
    kernel: { pid: 1234, kernel_id: 'k-1', alive: true },
    tasks: [
      {
        name: 'worker:0',
        job: 'worker',
        index: 0,
        host: 'h',
        address: '127.0.0.1:1',
        devices: 'CPU:0',
        state: 'idle',
        error: '',
        global_step: null,
        steps_per_sec: 0,
        examples_per_sec: 0
      }
    ],
    error: '',
    ...extra
  };
}

function view(opensDashboards = true): { v: ClusterView; calls: string[] } {
  const calls: string[] = [];
  const actions: IClusterActions = {
    opensDashboards,
    stop: c => calls.push(`stop ${c.id}`),
    forget: c => calls.push(`forget ${c.id}`),
    dashboard: c => calls.push(`dashboard ${c.id}`)
  };
  const v = new ClusterView(ID, actions);
  document.body.appendChild(v.node);
  return { v, calls };
}

function stopButton(v: ClusterView): HTMLButtonElement {
  return v.node.querySelector('.tfj-stop') as HTMLButtonElement;
}

const NOW = 1700000100;

describe('cluster row: Stop', () => {
  it('is "Stop" while running, disabled "stopping…" while a stop is under way', () => {
    const { v } = view();
    v.update(cluster(), NOW, undefined);
    expect(stopButton(v).textContent).toBe('Stop');
    expect(stopButton(v).disabled).toBe(false);
    v.update(cluster(), NOW, 'stop');
    expect(stopButton(v).textContent).toBe('stopping…');
    expect(stopButton(v).disabled).toBe(true);
    v.update(cluster({ state: 'stopping' }), NOW, undefined);
    expect(stopButton(v).textContent).toBe('stopping…');
    expect(stopButton(v).disabled).toBe(true);
  });

  it('a failed stop (still "stopping", with an error) can be retried; the error shows', () => {
    const { v, calls } = view();
    const error = `stopping cluster ${ID} with ipyparallel failed: TimeoutError: engines`;
    v.update(cluster({ state: 'stopping', error }), NOW, undefined);
    const stop = stopButton(v);
    expect(stop.hidden).toBe(false);
    expect(stop.disabled).toBe(false);
    expect(stop.textContent).toBe('Retry stop');
    const shown = v.node.querySelector('.tfj-cluster-error') as HTMLElement;
    expect(shown.hidden).toBe(false);
    expect(shown.textContent).toBe(error);
    stop.click();
    expect(calls).toEqual([`stop ${ID}`]);
    // the retry under way
    v.update(cluster({ state: 'stopping', error }), NOW, 'stop');
    expect(stop.disabled).toBe(true);
    expect(stop.textContent).toBe('stopping…');
    // stopped at last: no Stop, Forget offered, no error
    v.update(cluster({ state: 'stopped' }), NOW, undefined);
    expect(stop.hidden).toBe(true);
    expect(shown.hidden).toBe(true);
    expect((v.node.querySelector('.tfj-forget') as HTMLButtonElement).hidden).toBe(false);
  });

  it('after a stop request of the panel failed it says "Retry stop"', () => {
    const { v } = view();
    v.update(cluster(), NOW, undefined, true);
    expect(stopButton(v).textContent).toBe('Retry stop');
    expect(stopButton(v).disabled).toBe(false);
  });

  it('an orphaned cluster (with its error) offers Stop and Forget', () => {
    const { v } = view();
    const error = `cluster ${ID}: its kernel (pid 1234) has exited but its tasks still run`;
    v.update(
      cluster({ state: 'orphaned', error, kernel: { pid: 1234, kernel_id: 'k-1', alive: false } }),
      NOW,
      undefined
    );
    expect(stopButton(v).textContent).toBe('Stop');
    expect(stopButton(v).disabled).toBe(false);
    expect((v.node.querySelector('.tfj-forget') as HTMLButtonElement).hidden).toBe(false);
    expect((v.node.querySelector('.tfj-open-dashboard') as HTMLButtonElement).hidden).toBe(true);
    expect(v.node.querySelector('.tfj-cluster-error')!.textContent).toBe(error);
  });
});

describe('cluster row: Dashboard', () => {
  const dashboardButton = (v: ClusterView) =>
    v.node.querySelector('.tfj-open-dashboard') as HTMLButtonElement;

  it('is offered for a live cluster and asks for its dashboard', () => {
    const { v, calls } = view();
    v.update(cluster(), NOW, undefined);
    expect(dashboardButton(v).hidden).toBe(false);
    dashboardButton(v).click();
    expect(calls).toEqual([`dashboard ${ID}`]);
    v.update(cluster({ state: 'stopped' }), NOW, undefined);
    expect(dashboardButton(v).hidden).toBe(true);
  });

  it('is not offered where the front end cannot open a dashboard tab (Notebook 7)', () => {
    const { v } = view(false);
    v.update(cluster(), NOW, undefined);
    expect(dashboardButton(v).hidden).toBe(true);
    expect(stopButton(v).hidden).toBe(false);
  });
});

describe('dashboard code', () => {
  it('asks the kernel for exactly this cluster, in plain Python', () => {
    expect(dashboardCode(ID)).toBe(
      `import tfjupyter.lab as _tfj_lab; _tfj_lab.cluster_dashboard("${ID}")`
    );
    expect(dashboardCode('a_B-9')).toContain('cluster_dashboard("a_B-9")');
  });

  it('refuses ids that are not plain', () => {
    for (const bad of ['', 'a"); import os; os.system("x', 'a b', 'a\nb', "a'", 'a\\', 'ä', '../x']) {
      expect(dashboardCode(bad)).toBeNull();
    }
  });
});
