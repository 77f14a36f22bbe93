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
// Structured-clone values: what came in, described, and the moved bytes handed back moved.
export function values(v) {
  return { when: v.when, tags: v.tags, big: v.big * 2n, bytes: v.bytes, sum: v.bytes.reduce((a, b) => a + b, 0) };
}
