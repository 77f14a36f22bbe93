'use strict';
// The book's Happycoin miner in JavaScript (Multithreaded JavaScript, chapter 3's happycoin.js):
// BigInt arithmetic, one crypto.randomFillSync per draw into a BigUint64Array, the digit-by-digit
// isHappy loop, happiness checked before divisibility by 10000 (on purpose: it makes the work
// heavy). Used as is by the js-main row, and by the worker_threads and Piscina peers.
const crypto = require('node:crypto');

const big64arr = new BigUint64Array(1);

function random64() {
  crypto.randomFillSync(big64arr);
  return big64arr[0];
}

function sumDigitsSquared(num) {
  let total = 0n;
  while (num > 0n) {
    const numModBase = num % 10n;
    total += numModBase ** 2n;
    num = num / 10n;
  }
  return total;
}

// `num !== 0n` is not in the book: 0 is a fixed point of the digit-square map, and the book's
// loop would spin forever on it (a 1-in-2^64 draw).
function isHappy(num) {
  while (num !== 1n && num !== 4n && num !== 0n) {
    num = sumDigitsSquared(num);
  }
  return num === 1n;
}

function isHappycoin(num) {
  return isHappy(num) && num % 10000n === 0n;
}

/** Tries `draws` random numbers; returns the Happycoins found, as decimal strings. */
function mine(draws) {
  const coins = [];
  for (let i = 0; i < draws; i++) {
    const randomNum = random64();
    if (isHappycoin(randomNum)) coins.push(randomNum.toString());
  }
  return coins;
}

module.exports = { random64, sumDigitsSquared, isHappy, isHappycoin, mine };
