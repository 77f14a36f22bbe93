'use strict';
// An HTTP app (Express's) listening for one test.

/** Listens on a free loopback port; resolves with its base URL and a close(). */
function listen(app) {
  return new Promise((resolve) => {
    const server = app.listen(0, '127.0.0.1', () => {
      resolve({ url: `http://127.0.0.1:${server.address().port}`, close: () => new Promise((r) => server.close(r)) });
    });
  });
}

module.exports = { listen };
