// A man page (roff, man(7) macros) from a docs page's Markdown: what the release's packages install as
// `man watchdog`. Only what the docs use: headings, paragraphs, indented or fenced code, lists, tables
// (kept as preformatted text), inline code and emphasis (bold / italic), links (their text).

/** Punctuation as roff's own glyphs, which every output device has (a C locale's ASCII too). */
const GLYPHS: Record<string, string> = {
  "…": "...",
  "—": "\\(em",
  "–": "\\(en",
  "→": "\\(->",
  "←": "\\(<-",
  "×": "\\(mu",
  "≤": "\\(<=",
  "≥": "\\(>=",
  "·": "\\(pc",
};

/** Roff's glyphs for that punctuation: applied last, after `-` became `\\-` (a glyph's name has a `-`). */
const glyphs = (text: string) => text.replace(/[…—–→←×≤≥·]/g, (char) => GLYPHS[char]);

/** Text safe for roff: backslashes escaped, a line never starting with a control character. */
function escape(text: string): string {
  return text.replace(/\\/g, "\\e").replace(/^([.'])/gm, "\\&$1");
}

/** Inline Markdown to roff fonts: `code` and **strong** bold, *em* italic, [text](link) its text. */
function inline(text: string): string {
  return glyphs(
    escape(text)
      .replace(/\[([^\]]+)\]\([^)]+\)/g, "$1")
      .replace(/`([^`]+)`/g, "\\fB$1\\fR")
      .replace(/\*\*([^*]+)\*\*/g, "\\fB$1\\fR")
      .replace(/(^|[\s(])\*([^*\s][^*]*)\*/g, "$1\\fI$2\\fR")
      .replace(/-/g, "\\-"),
  );
}

export function manPage(name: string, version: string, summary: string, markdown: string): string {
  const out = [`.TH ${name.toUpperCase()} 1 "" "tend ${version}" "tend manual"`];
  const lines = markdown.replace(/\r\n/g, "\n").split("\n");
  let first = true;
  let paragraph: string[] = [];
  const flush = () => {
    if (paragraph.length) out.push(".PP", inline(paragraph.join(" ")));
    paragraph = [];
  };
  const verbatim = (block: string[]) => {
    out.push(".PP", ".nf", ".RS 4", ...block.map((line) => glyphs(escape(line).replace(/-/g, "\\-"))), ".RE", ".fi");
  };
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index];
    const heading = /^(#+)\s+(.*)$/.exec(line);
    if (heading) {
      flush();
      if (first) {
        out.push(".SH NAME", `${name} \\- ${inline(summary)}`, ".SH SYNOPSIS");
        first = false;
      } else out.push(heading[1].length <= 2 ? ".SH" : ".SS", inline(heading[2].toUpperCase()));
      continue;
    }
    if (/^```/.test(line)) {
      flush();
      const block: string[] = [];
      for (index++; index < lines.length && !/^```/.test(lines[index]); index++) block.push(lines[index]);
      verbatim(block);
      continue;
    }
    if (/^ {4}\S/.test(line) && paragraph.length === 0) {
      const block: string[] = [];
      for (; index < lines.length && (/^ {4}/.test(lines[index]) || lines[index] === ""); index++)
        block.push(lines[index].slice(4));
      index--;
      while (block.length && block[block.length - 1] === "") block.pop();
      verbatim(block);
      continue;
    }
    if (/^\|/.test(line)) {
      flush();
      const block: string[] = [];
      for (; index < lines.length && /^\|/.test(lines[index]); index++)
        if (!/^\|[\s:|-]+\|$/.test(lines[index])) block.push(lines[index].replace(/`/g, ""));
      index--;
      verbatim(block);
      continue;
    }
    const item = /^(\s*)(?:[-*]|\d+\.)\s+(.*)$/.exec(line);
    if (item) {
      flush();
      paragraph = [item[2]];
      for (index++; index < lines.length && /^\s{2,}\S/.test(lines[index]) && !/^\s*[-*]\s/.test(lines[index]); index++)
        paragraph.push(lines[index].trim());
      index--;
      out.push(".IP \\(bu 2", inline(paragraph.join(" ")));
      paragraph = [];
      continue;
    }
    if (line.trim() === "") flush();
    else paragraph.push(line.trim());
  }
  flush();
  return out.join("\n") + "\n";
}
