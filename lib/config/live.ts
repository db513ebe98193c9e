import { statSync } from "node:fs";
import { errorMessage } from "../core/errors.ts";
import { loadConfig } from "./load.ts";
import type { Config, Env } from "./types.ts";

/** What a long-running process learns when it looks at its configuration file again. */
interface Refreshed {
  config: Config;
  /** The file changed and is now invalid (said once per distinct error): the last good one stays. */
  broken: string | null;
  /** The file changed and was read: this configuration is new. */
  reloaded: boolean;
}

/**
 * The configuration of `watchdog run` and `serve`: read again when its file changes (a stat per look:
 * mtime, size, inode); an invalid edit keeps the last good configuration, and is reported once.
 */
export class LiveConfig {
  private stamp: string;
  private said: string | null = null;
  /** When the configuration in use was loaded (epoch ms). */
  loadedAt: number;

  constructor(
    public config: Config,
    private readonly env: Env,
    now = Date.now(),
  ) {
    this.stamp = stampOf(config.path);
    this.loadedAt = now;
  }

  refresh(now = Date.now()): Refreshed {
    const stamp = stampOf(this.config.path);
    if (stamp === this.stamp) return { config: this.config, broken: null, reloaded: false };
    this.stamp = stamp;
    try {
      this.config = loadConfig({ path: this.config.path, env: this.env });
      this.loadedAt = now;
      this.said = null;
      return { config: this.config, broken: null, reloaded: true };
    } catch (error) {
      const message = errorMessage(error);
      const fresh = message !== this.said;
      this.said = message;
      return { config: this.config, broken: fresh ? message : null, reloaded: false };
    }
  }
}

/** The file's identity and version: a change of any is an edit (an editor's rename changes the inode). */
function stampOf(path: string): string {
  try {
    const stat = statSync(path);
    return `${stat.ino}:${stat.size}:${stat.mtimeMs}`;
  } catch (error) {
    return `unreadable: ${errorMessage(error)}`;
  }
}
