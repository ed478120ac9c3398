import { parentPort, workerData } from 'node:worker_threads';
import type { SimulateOptions } from '../options/simulate.js';
import type { SimulationInputs } from './prepare.js';
import { runOneConfiguration } from './sweep-run.js';

/** A worker thread of a parallel sweep: runs the grid points it is sent, one at a time. */
interface WorkerData {
  inputs: SimulationInputs;
}

const { inputs } = workerData as WorkerData;
parentPort?.on('message', (message: { index: number; options: SimulateOptions } | 'stop') => {
  if (message === 'stop') {
    parentPort?.close();
    return;
  }
  try {
    parentPort?.postMessage({ index: message.index, report: runOneConfiguration(message.options, inputs) });
  } catch (error) {
    parentPort?.postMessage({ index: message.index, error: (error as Error).message });
  }
});
