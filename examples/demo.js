// `npm start`: mines Happycoins on the native pool and prints them like the book's
// happycoin-threads.js (the coins, then `count N`), then renders a template on the pool.
'use strict';
const { Pool } = require('..');

async function main() {
  const pool = new Pool();
  const draws = 10_000_000;
  const share = Math.ceil(draws / pool.threads);

  console.log(`Mining Happycoins: ${draws.toLocaleString('en')} random u64 draws on ${pool.threads} native threads…`);
  const started = process.hrtime.bigint();
  const parts = await Promise.all(
    Array.from({ length: pool.threads }, (_, i) => pool.exec('happycoin', { attempts: Math.min(share, draws - i * share) })),
  );
  const ms = Number(process.hrtime.bigint() - started) / 1e6;
  const coins = parts.flatMap((p) => p.coins);
  console.log(coins.join(' '));
  console.log(`count ${coins.length}`);
  console.log(`mined in ${ms.toFixed(0)} ms (${((draws / ms) * 1000 / 1e6).toFixed(1)}M draws/s)`);

  const template = '<h1>{{title}}</h1><ul>{{#coins}}<li>{{.}}</li>{{/coins}}{{^coins}}<li>none this time</li>{{/coins}}</ul>';
  const html = await pool.exec('render', template, { title: 'Happycoins & friends', coins: coins.slice(0, 3) });
  console.log(`\nRendered on the pool:\n${html}`);
  await pool.close();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
