'use strict';
// The WorkerPool lesson's exercise: eight orders invoiced on four JavaScript workers, results in
// order, failures reported without stopping the others.
//
//   node examples/invoices.js [--slow ORDER]   (ORDER's invoice then takes longer than 1 s)
const path = require('node:path');
const { Pool } = require('..');

const orders = [
  [1001, 50], [1002, 125], [1003, 80], [1004, 0],
  [1005, 240], [1006, 35], [1007, 90], [1008, 15],
];
const slow = process.argv.indexOf('--slow');
const slowAmount = slow > 0 ? new Map(orders).get(Number(process.argv[slow + 1])) : undefined;

async function main() {
  const pool = new Pool({ filename: path.join(__dirname, 'invoice.js'), threads: 4, maxQueue: 10, timeout: 1000, workerData: { slowAmount } });
  const results = await pool.map('invoice', orders.map(([, amount]) => amount), {
    settle: 'all',
    onProgress: (done, total) => console.log(`${done} of ${total} done`),
  });
  let total = 0;
  let failed = 0;
  results.forEach((r, i) => {
    if (r.status === 'fulfilled') total += r.value;
    else failed++;
    console.log(`order ${orders[i][0]}: ${r.status === 'fulfilled' ? `${r.value.toFixed(2)} €` : `failed: ${r.reason.message}`}`);
  });
  console.log(`total ${total.toFixed(2)} €, ${failed} failed`);
  await pool.close();
}

main();
