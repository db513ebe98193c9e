/** Termux: TERMUX_VERSION set, or PREFIX under /data/data/ (the spec's test). */
export const isTermux = (env: Record<string, string | undefined>) =>
  Boolean(env.TERMUX_VERSION) || Boolean(env.PREFIX?.startsWith("/data/data/"));
