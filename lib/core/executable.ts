// What a file's first bytes say it is, before anything runs it: self-update checks that the new
// binary is an executable for this host (its ELF or Mach-O header) before the preview runs it. A
// script, an HTML error page, a truncated download or the build for another platform is refused in
// words, without being run (as root, often). Pure: the caller reads the head of the file.

/** The host a binary must run on. `android`: Termux (bionic's linker, not glibc's). */
export interface Host {
  platform: string;
  arch: string;
  android: boolean;
}

/** A host in words: Termux is android-ARCH whatever Bun's platform says (its build is not Linux's). */
export const hostName = (host: Host) => `${host.android ? "android" : host.platform}-${host.arch}`;

/** How many bytes of the file the check reads: the header, the program headers, the interpreter. */
export const HEAD_BYTES = 64 * 1024;

const ELF_MACHINES: Record<number, string> = { 3: "x86 (32-bit)", 40: "arm (32-bit)", 62: "x64", 183: "arm64" };
const MACHO_CPUS: Record<number, string> = { 0x01000007: "x64", 0x0100000c: "arm64" };
const ANDROID_LINKER = "/system/bin/linker64";
const PT_INTERP = 3;

/** The ELF's program interpreter (PT_INTERP), if its program headers lie in `head`. */
function elfInterpreter(head: Uint8Array): string | null {
  const view = new DataView(head.buffer, head.byteOffset, head.byteLength);
  const programHeaders = Number(view.getBigUint64(32, true));
  const entrySize = view.getUint16(54, true);
  const count = view.getUint16(56, true);
  for (let index = 0; index < count; index++) {
    const at = programHeaders + index * entrySize;
    if (at + 40 > head.byteLength) return null;
    if (view.getUint32(at, true) !== PT_INTERP) continue;
    const offset = Number(view.getBigUint64(at + 8, true));
    const size = Number(view.getBigUint64(at + 32, true));
    if (offset + size > head.byteLength) return null;
    return new TextDecoder().decode(head.subarray(offset, offset + size)).replace(/\0+$/, "");
  }
  return null;
}

/** What a non-executable head looks like, in words. */
function looksLike(head: Uint8Array): string {
  const text = new TextDecoder("utf-8", { fatal: false }).decode(head.subarray(0, 512)).trimStart();
  if (text.startsWith("#!")) return `a script (${JSON.stringify(text.split("\n")[0].slice(0, 40))})`;
  if (/^<(!doctype|html|\?xml)/i.test(text)) return "an HTML or XML page (an error page from the server?)";
  if (head.byteLength === 0) return "an empty file";
  if (head[0] === 0x1f && head[1] === 0x8b) return "a gzip archive (unpack it first)";
  if (head.byteLength < 64) return `${head.byteLength} bytes (a truncated download?)`;
  return "not an ELF or Mach-O executable";
}

/**
 * Why `head` (the file's first bytes) is not an executable for `host`, or null when it is one: a
 * 64-bit little-endian ELF for the host's machine (on Android with bionic's linker, elsewhere
 * without it), or a 64-bit Mach-O for the Mac's CPU.
 */
export function executableProblem(head: Uint8Array, host: Host): string | null {
  const want = hostName(host);
  const u32 = (at: number, little = true) =>
    new DataView(head.buffer, head.byteOffset, head.byteLength).getUint32(at, little);
  if (head.byteLength >= 64 && head[0] === 0x7f && head[1] === 0x45 && head[2] === 0x4c && head[3] === 0x46) {
    if (head[4] !== 2 || head[5] !== 1) return `a 32-bit or big-endian ELF; this host is ${want}`;
    const machine = new DataView(head.buffer, head.byteOffset).getUint16(18, true);
    const arch = ELF_MACHINES[machine] ?? `machine ${machine}`;
    const interpreter = elfInterpreter(head);
    const android = interpreter === ANDROID_LINKER;
    const is = `an ELF for ${android ? "android" : "linux"}-${arch}`;
    if (host.platform !== "linux" && host.platform !== "android") return `${is}; this host is ${want}`;
    if (arch !== host.arch) return `${is}; this host is ${want}`;
    if (android !== host.android)
      return host.android
        ? `${is} (glibc's, which Termux cannot run); take the linux-arm64-android build`
        : `${is} (bionic's linker ${ANDROID_LINKER}); this host is ${want}`;
    return null;
  }
  if (head.byteLength >= 8 && u32(0) === 0xfeedfacf) {
    const arch = MACHO_CPUS[u32(4)] ?? `cpu 0x${u32(4).toString(16)}`;
    return host.platform === "darwin" && arch === host.arch
      ? null
      : `a Mach-O for darwin-${arch}; this host is ${want}`;
  }
  if (head.byteLength >= 8 && u32(0, false) === 0xcafebabe) {
    // A universal binary: fat_arch entries (20 bytes, big-endian) after the count.
    const count = Math.min(u32(4, false), Math.floor((head.byteLength - 8) / 20));
    const arches = Array.from({ length: count }, (_, index) => MACHO_CPUS[u32(8 + index * 20, false)] ?? "other");
    return host.platform === "darwin" && arches.includes(host.arch)
      ? null
      : `a universal Mach-O for darwin (${arches.join(", ")}); this host is ${want}`;
  }
  return `${looksLike(head)}; this host needs an executable for ${want}`;
}
