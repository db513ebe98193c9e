// `self-update --channel URL-or-DIR` (SPEC "self-update"): a release channel instead of one SOURCE.
// Trust is a key, not a place: release.json is verified against an Ed25519 public key the operator
// configured ([self_update] keys) or the release built in, before anything of the channel is run;
// the signed file names this host's binary and its sha256, which then pins the download.
import { createPublicKey, verify, type KeyObject } from "node:crypto";
import { join } from "node:path";
import { refused, TendError } from "../core/errors.ts";
import { KEY_FORM } from "../core/release-key.ts";
import { redactUrl } from "../core/redact.ts";
import { oneLine } from "../core/sanitize.ts";
import { inWords, readBounded } from "../os/files.ts";
import { isTimeout, networkReason } from "../os/net.ts";
import { hostName, type Host } from "../core/executable.ts";
import { DOWNLOAD_LIMIT, installedVersion, thisHost, updateBinary, type UpdateIo } from "./update.ts";

/** The targets a release carries (SPEC "Releases"): `bun build --target=bun-<target>`. */
const RELEASE_TARGETS = ["linux-x64", "linux-arm64", "linux-arm64-android", "darwin-arm64"] as const;
type ReleaseTarget = (typeof RELEASE_TARGETS)[number];

/** release.json: what a channel offers, signed as a whole. */
export interface Release {
  version: string;
  /** Each target's file, its hash and (releases since 0.6) its size: the download's bound. */
  targets: Partial<Record<ReleaseTarget, { file: string; sha256: string; size?: number }>>;
}

/** DER of an Ed25519 SubjectPublicKeyInfo, before its 32 raw bytes (RFC 8410). */
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");
const RELEASE_LIMIT = 1024 * 1024;
const SIGNATURE_LIMIT = 4096;
const SEMVER = /^(\d{1,9})\.(\d{1,9})\.(\d{1,9})(?:[+-][\w.-]*)?$/;

const publicKey = (key: string): KeyObject =>
  createPublicKey({
    key: Buffer.concat([SPKI_PREFIX, Buffer.from(KEY_FORM.exec(key)![1], "base64")]),
    format: "der",
    type: "spki",
  });

/** The host's target: Termux runs only the Android build. */
export function targetOf(host: Host): ReleaseTarget | null {
  if (host.platform === "darwin" && host.arch === "arm64") return "darwin-arm64";
  if (host.platform !== "linux" && !host.android) return null;
  if (host.arch === "arm64") return host.android ? "linux-arm64-android" : "linux-arm64";
  if (host.arch === "x64" && !host.android) return "linux-x64";
  return null;
}

/** -1, 0, 1: x.y.z compared as numbers (a +build or -pre suffix does not order). */
function compareVersions(a: string, b: string): number {
  const [left, right] = [SEMVER.exec(a), SEMVER.exec(b)];
  if (!left || !right) throw new TendError(`cannot compare versions ${a} and ${b}`, 1);
  for (let index = 1; index <= 3; index++) {
    const difference = Number(left[index]) - Number(right[index]);
    if (difference) return Math.sign(difference);
  }
  return 0;
}

const isUrl = (channel: string) => /^https?:\/\//i.test(channel);

/** A file of the channel, at most `limit` bytes: null when it is not there (a 404, no such file). */
async function readChannel(channel: string, name: string, limit: number, fetchImpl: typeof fetch) {
  if (!isUrl(channel)) {
    const path = join(channel, name);
    let read: { bytes: Buffer; more: boolean };
    try {
      // The one reader: a FIFO, a device or a directory there is refused in words, never waited on.
      read = readBounded(path, limit, { follow: true });
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return null;
      if ((error as NodeJS.ErrnoException).code === "EFTYPE") throw refused(`${path}: ${inWords(error)}: refused`);
      throw new TendError(`${path}: ${inWords(error)}`, 1);
    }
    if (read.more) throw refused(`${path}: more than ${limit} bytes: not a release file`);
    return read.bytes;
  }
  const url = new URL(name, channel.endsWith("/") ? channel : `${channel}/`).toString();
  let response: Response;
  try {
    response = await fetchImpl(url, { signal: AbortSignal.timeout(60_000) });
  } catch (error) {
    const reason = isTimeout(error) ? "no answer within 60s" : networkReason(error);
    throw new TendError(`channel ${redactUrl(channel)}: ${name}: ${reason}`, 1);
  }
  if (response.status === 404 || response.status === 410) return (await response.body?.cancel().catch(() => {}), null);
  if (response.status < 200 || response.status > 299)
    throw new TendError(`channel ${redactUrl(channel)}: ${name}: HTTP ${response.status}`, 1);
  const reader = response.body?.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  while (reader) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > limit) {
      await reader.cancel().catch(() => {});
      throw refused(`channel ${redactUrl(channel)}: ${name}: more than ${limit} bytes: not a release file`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}

/** Which trusted key signed these bytes (base64 of the raw 64-byte signature), or a refusal. */
function verifiedBy(bytes: Uint8Array, signature: Uint8Array | null, keys: string[], what: string): string {
  if (signature === null) throw refused(`${what}.sig: not in the channel: an unsigned release is never installed`);
  const text = Buffer.from(signature).toString("utf8").trim();
  const raw = /^[A-Za-z0-9+/]+={0,2}$/.test(text) ? Buffer.from(text, "base64") : Buffer.alloc(0);
  if (raw.length !== 64) throw refused(`${what}.sig: not the base64 of a 64-byte Ed25519 signature: refused`);
  if (keys.length === 0)
    throw refused(`no trusted key: set [self_update] keys = ["ed25519:BASE64"] (this binary has none built in)`);
  const signer = keys.find((key) => verify(null, bytes, publicKey(key), raw));
  if (!signer)
    throw refused(
      `${what}: its signature does not verify with any trusted key (${keys.map(shortKey).join(", ")}): ` +
        "tampered, or signed by a key this host does not trust: refused",
    );
  return signer;
}

const shortKey = (key: string) => `${key.slice(0, 16)}…`;

/** release.json read as a release, every field checked (it is trusted only for what it says exactly). */
function parseRelease(bytes: Uint8Array): Release {
  let value: unknown;
  try {
    value = JSON.parse(Buffer.from(bytes).toString("utf8"));
  } catch (error) {
    throw refused(`release.json: not JSON (${oneLine((error as Error).message)}): refused`);
  }
  const release = value as Release;
  if (typeof release?.version !== "string" || !SEMVER.test(release.version))
    throw refused(`release.json: "version" must be x.y.z: refused`);
  if (typeof release.targets !== "object" || release.targets === null)
    throw refused(`release.json: "targets" must be a table of targets: refused`);
  for (const [target, entry] of Object.entries(release.targets)) {
    if (typeof entry?.file !== "string" || !/^[A-Za-z0-9_+-][A-Za-z0-9._+-]*$/.test(entry.file))
      throw refused(`release.json: targets.${target}.file must be a file name in the channel: refused`);
    if (typeof entry.sha256 !== "string" || !/^[0-9a-f]{64}$/.test(entry.sha256))
      throw refused(`release.json: targets.${target}.sha256 must be 64 lowercase hex digits: refused`);
    if (entry.size !== undefined && !(Number.isSafeInteger(entry.size) && entry.size > 0))
      throw refused(`release.json: targets.${target}.size must be a positive whole number of bytes: refused`);
  }
  return release;
}

interface ChannelUpdate {
  channel: string;
  target: string;
  config: string;
  /** Trusted keys: [self_update] keys, then the key built into this binary at release. */
  keys: string[];
  /** The running binary's version (x.y.z[+build]). */
  current: string;
  allowDowngrade: boolean;
  host?: Host;
}

/**
 * Verify the channel's release.json with a trusted key, pick this host's target, refuse a downgrade
 * (unless allowed) — all before anything is downloaded or run — then install its file through the
 * binary update, its sha256 pinned by the signed release.
 */
export async function updateFromChannel(update: ChannelUpdate, io: UpdateIo): Promise<void> {
  const fetchImpl = io.fetch ?? fetch;
  const where = isUrl(update.channel) ? redactUrl(update.channel) : update.channel;
  const bytes = await readChannel(update.channel, "release.json", RELEASE_LIMIT, fetchImpl);
  if (bytes === null) throw new TendError(`channel ${where}: no release.json there`, 1);
  const signature = await readChannel(update.channel, "release.json.sig", SIGNATURE_LIMIT, fetchImpl);
  const signer = verifiedBy(bytes, signature, update.keys, "release.json");
  const release = parseRelease(bytes);
  io.say(`channel ${where}: tend ${release.version}, signed by ${shortKey(signer)}`);
  const host = update.host ?? thisHost();
  const target = targetOf(host);
  const entry = target ? release.targets[target] : undefined;
  if (!target || !entry)
    throw refused(
      `the release has no binary for this host (${target ?? hostName(host)}); it has: ` +
        `${Object.keys(release.targets).join(", ") || "none"}`,
    );
  // Older than the running binary, or than the one at the target (--target another tend): a downgrade.
  const installed = await (io.versionOf ?? installedVersion)(update.target);
  for (const [what, version] of [
    ["the running", update.current],
    [`the installed ${update.target}'s`, installed],
  ] as const)
    if (version && compareVersions(release.version, version) < 0 && !update.allowDowngrade)
      throw refused(
        `tend ${release.version} is older than ${what} ${version}: a downgrade (a replayed old release?) ` +
          "is refused without --allow-downgrade",
      );
  const source = isUrl(update.channel)
    ? new URL(entry.file, update.channel.endsWith("/") ? update.channel : `${update.channel}/`).toString()
    : join(update.channel, entry.file);
  io.say(`${target}: ${entry.file} (sha256 ${entry.sha256.slice(0, 12)}…)`);
  await updateBinary(
    {
      source,
      target: update.target,
      sha256: entry.sha256,
      config: update.config,
      signed: release.version,
      limit: entry.size ?? DOWNLOAD_LIMIT,
    },
    io,
  );
}
