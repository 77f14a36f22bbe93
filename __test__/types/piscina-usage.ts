// corepool/piscina's types: what a Piscina user writes compiles, the wrong uses do not
// (__test__/piscina.test.js compiles this with tsc --strict; each @ts-expect-error must be an error).
import Piscina, { Piscina as Named, move, isWorkerThread, workerData, transferableSymbol, valueSymbol } from 'corepool/piscina';

const pool = new Piscina<{ a: number; b: number }, number>({
  filename: '/tasks.js',
  minThreads: 1,
  maxThreads: 4,
  maxQueue: 'auto',
  concurrentTasksPerWorker: 2,
  atomics: 'disabled',
  resourceLimits: { maxOldGenerationSizeMb: 64 },
  env: { A: '1' },
  workerData: { any: 'thing' },
  taskQueue: new Piscina.FixedQueue(),
  niceIncrement: 2,
  closeTimeout: 100,
  recordTiming: true,
});
const sum: Promise<number> = pool.run({ a: 1, b: 2 }, { name: 'add', signal: new AbortController().signal, filename: null });
const closed: Promise<void> = pool.close({ force: true });
const destroyed: Promise<void> = pool.destroy();
const other: Named = new Named();
const counts: number = pool.completed + pool.queueSize + pool.idleThreads + pool.utilization + pool.duration + pool.threads[0].threadId;
const mean: number | undefined = pool.histogram.runTime?.mean;
const drained: boolean = pool.needsDrain && isWorkerThread;
const moved = move(new Uint8Array(4));
const inside: unknown = moved[transferableSymbol] ?? moved[valueSymbol] ?? workerData;
pool.on('drain', () => {});
const version: string = Piscina.version;

// @ts-expect-error maxQueue is a number or 'auto'
new Piscina({ maxQueue: 'lots' });
// @ts-expect-error the task's type is the pool's
pool.run('not a task');
// @ts-expect-error force is a boolean
pool.close({ force: 'yes' });

export { sum, closed, destroyed, other, counts, mean, drained, inside, version };
