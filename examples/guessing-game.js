// The number-guessing game between the main thread and a worker over one shared Int32Array.
// The turn passes back and forth through two corepool Semaphores on that array (one permit
// each way, Atomics.wait/notify underneath): the worker blocks in acquire(), the main thread
// awaits acquireAsync() and so keeps its event loop free.
//
//   node examples/guessing-game.js [secret=1..1000, random by default]
'use strict';
const { Worker, isMainThread, workerData } = require('node:worker_threads');
const { Semaphore } = require('..');

// The shared Int32Array: two semaphores, then the guess and the host's answer.
const HOST_TURN = 0;
const PLAYER_TURN = 1;
const GUESS = 2;
const ANSWER = 3; // -1: higher, 1: lower, 0: right
const MAX = 1000;

if (isMainThread) {
  const secret = Number(process.argv[2] ?? 1 + Math.floor(Math.random() * MAX));
  if (!(Number.isInteger(secret) && secret >= 1 && secret <= MAX)) {
    console.error(`the secret must be a whole number from 1 to ${MAX}`);
    process.exit(2);
  }
  const shared = new Int32Array(new SharedArrayBuffer(16));
  const hostTurn = new Semaphore(shared, HOST_TURN, 0);
  const playerTurn = new Semaphore(shared, PLAYER_TURN, 0);
  const player = new Worker(__filename, { workerData: shared });
  (async () => {
    console.log(`I am thinking of a number from 1 to ${MAX}.`);
    for (let tries = 1; ; tries++) {
      if (!(await hostTurn.acquireAsync(10_000))) throw new Error('the player went quiet');
      const guess = shared[GUESS];
      const answer = Math.sign(guess - secret);
      console.log(`guess ${tries}: ${guess} → ${answer < 0 ? 'higher' : answer > 0 ? 'lower' : 'right!'}`);
      shared[ANSWER] = answer;
      playerTurn.release();
      if (answer === 0) {
        console.log(`guessed ${secret} in ${tries} tries`);
        break;
      }
    }
    await new Promise((resolve) => player.once('exit', resolve));
  })().catch((e) => {
    console.error(e);
    process.exit(1);
  });
} else {
  const shared = workerData;
  const hostTurn = new Semaphore(shared, HOST_TURN);
  const playerTurn = new Semaphore(shared, PLAYER_TURN);
  let low = 1;
  let high = MAX;
  for (;;) {
    const guess = Math.floor((low + high) / 2);
    shared[GUESS] = guess;
    hostTurn.release();
    if (!playerTurn.acquire(10_000)) throw new Error('the host went quiet');
    const answer = shared[ANSWER];
    if (answer === 0) break;
    if (answer < 0) low = guess + 1;
    else high = guess - 1;
  }
}
