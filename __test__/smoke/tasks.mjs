// The task file of the runtime smoke check: ES module, default and named exports.
export default function (task) {
  return { task, kind: 'default' };
}
export const double = (x) => 2 * x;
export async function steps(n, ctx) {
  for (let i = 1; i <= n; i++) {
    await new Promise((resolve) => setImmediate(resolve));
    ctx.progress({ step: i });
  }
  return n;
}
