// A stand-in tend for the self-update tests: a real executable (a Bun-compiled ELF, as self-update
// checks the header before it runs anything) whose behaviour is a shell script. The script's path
// is compiled in (--define STANDIN_SCRIPT=...), and sourced with $0 the binary's own path and $@
// its arguments, so a stand-in behaves like the script it wraps wherever it is copied. The shell that
// sources it: STANDIN_SHELL when defined (the phone's is $PREFIX/bin/sh: it has no /bin/sh), else /bin/sh.
declare const STANDIN_SCRIPT: string;
declare const STANDIN_SHELL: string | undefined;
const quoted = `'${STANDIN_SCRIPT.replaceAll("'", `'\\''`)}'`;
const child = Bun.spawnSync(
  [
    typeof STANDIN_SHELL === "string" ? STANDIN_SHELL : "/bin/sh",
    "-c",
    `. ${quoted}`,
    process.execPath,
    ...process.argv.slice(2),
  ],
  {
    stdio: ["inherit", "inherit", "inherit"],
  },
);
process.exit(child.exitCode ?? 128 + 9);
