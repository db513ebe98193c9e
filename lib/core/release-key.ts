// A release key as configured (`[self_update] keys`) and as built into a release binary: `ed25519:`
// and the base64 of the raw 32-byte Ed25519 public key (SPEC "self-update").

export const KEY_FORM = /^ed25519:([A-Za-z0-9+/]{43}=)$/;

/** The problem with a key's text, or null. */
export function keyProblem(key: string): string | null {
  const match = KEY_FORM.exec(key);
  if (!match || Buffer.from(match[1], "base64").length !== 32)
    return `${JSON.stringify(key)} is not ed25519:BASE64 (the base64 of a raw 32-byte Ed25519 public key)`;
  return null;
}
