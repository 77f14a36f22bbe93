'use strict';
// A handler's result taken as `await` takes it: its `then` read once. Reading `then` runs user
// code (a getter, a Proxy trap), and a second read may find another method, or none.

/**
 * A promise that adopts `result` if it is a thenable (its `then`, read once here, is a
 * function), else null. Throws what reading `then` throws. The promise settles once: a `then`
 * that throws, or calls back twice, settles it as it would an awaited one.
 */
function adopt(result) {
  if (result === null || (typeof result !== 'object' && typeof result !== 'function')) return null;
  const then = result.then;
  if (typeof then !== 'function') return null;
  return new Promise((resolve, reject) => {
    then.call(result, resolve, reject);
  });
}

module.exports = { adopt };
