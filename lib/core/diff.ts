/** A unified diff of two texts (LCS; plans are small), with `context` lines around each change. */
export function unifiedDiff(oldText: string, newText: string, oldName: string, newName: string, context = 3): string {
  const a = oldText.split("\n");
  const b = newText.split("\n");
  if (a.at(-1) === "") a.pop();
  if (b.at(-1) === "") b.pop();
  // lcs[i][j]: length of the longest common subsequence of a[i..] and b[j..]
  const lcs = Array.from({ length: a.length + 1 }, () => new Uint32Array(b.length + 1));
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--)
      lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  }
  type Op = { kind: " " | "-" | "+"; text: string; oldLine: number; newLine: number };
  const ops: Op[] = [];
  let i = 0;
  let j = 0;
  while (i < a.length || j < b.length) {
    if (i < a.length && j < b.length && a[i] === b[j]) ops.push({ kind: " ", text: a[i], oldLine: i++, newLine: j++ });
    else if (j < b.length && (i >= a.length || lcs[i][j + 1] > lcs[i + 1][j]))
      ops.push({ kind: "+", text: b[j], oldLine: i, newLine: j++ });
    else ops.push({ kind: "-", text: a[i], oldLine: i++, newLine: j });
  }
  const changed = ops.map((op, index) => (op.kind === " " ? -1 : index)).filter((index) => index >= 0);
  if (!changed.length) return "";
  const out = [`--- ${oldName}`, `+++ ${newName}`];
  let start = 0;
  while (start < changed.length) {
    let end = start;
    while (end + 1 < changed.length && changed[end + 1] - changed[end] <= context * 2) end++;
    const from = Math.max(0, changed[start] - context);
    const to = Math.min(ops.length - 1, changed[end] + context);
    const hunk = ops.slice(from, to + 1);
    const oldCount = hunk.filter((op) => op.kind !== "+").length;
    const newCount = hunk.filter((op) => op.kind !== "-").length;
    out.push(
      `@@ -${hunk[0].oldLine + (oldCount ? 1 : 0)},${oldCount} +${hunk[0].newLine + (newCount ? 1 : 0)},${newCount} @@`,
    );
    for (const op of hunk) out.push(`${op.kind}${op.text}`);
    start = end + 1;
  }
  return out.join("\n") + "\n";
}
