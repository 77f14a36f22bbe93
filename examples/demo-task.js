'use strict';
// The task file `npm start` (examples/demo.js) runs on Piscina and on corepool alike: the same
// JavaScript, so that what differs is the pool around it.

/** A tiny task: the cost of a call is all there is. */
exports.tiny = (n) => n + 1;

/** A moderately heavy task: about a millisecond or two of arithmetic on this kind of machine. */
exports.moderate = (n) => {
  let x = n;
  for (let i = 0; i < 1_000_000; i++) x = (x * 31 + i) % 1_000_003;
  return x;
};
