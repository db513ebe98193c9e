// The phone's side of the Termux-shaped sandbox (test/termux.ts): one static binary, called by name.
//
//   android init                      PID 1 of the phone's pid namespace: reaps orphans, as Android's init does.
//   android run [--uid N] [--gid N] [--cwd DIR] [--env K=V]... -- ARGV...
//                                     ARGV as an app: the uid, no_new_privs, and Android's seccomp filter:
//                                     ENOSYS for the syscalls an Android 8-10 phone's kernel (4.4-4.14) or its
//                                     filter lacks (statx, rseq, io_pgetevents, everything from 424 on:
//                                     pidfd_open, clone3, close_range, openat2, faccessat2, fchmodat2, ...),
//                                     and EACCES for what Android's SELinux policy denies an app: /proc/uptime,
//                                     /proc/stat, /proc/loadavg, /proc/version, /proc/vmstat, /proc/net,
//                                     /proc/PID/net (self, thread-self, a task's). Opens are judged by a
//                                     supervisor outside the filter (seccomp user notification), the way an
//                                     LSM judges them on the phone. --uid 0: no filter, no uid (su's root).
//   android nosetgroups -- ARGV...    ARGV with setgroups(2) a no-op: Termux's crond runs as the app user and
//                                     never changes groups; Debian's busybox crond calls initgroups for the
//                                     job's user (itself), which an app may not. Only crond runs under it.
//   android idmap SRC DST ID [PROC]   DST: SRC with host uid/gid ID's files shown as root's (crond's view of
//                                     the app's crontab spool; see idmap_main).
//   sh (as /system/bin/sh)            Android's /bin/sh is mksh, not Termux's shell: says so, exit 127.
//   getprop [NAME]                    the build properties an app reads, from /system/build.prop (the API
//                                     level the test chose: ro.build.version.sdk).
//   android syscalls                  what the kernel answers statx, pidfd_open, close_range, openat2 and
//                                     fchmodat2 here: the test that the filter holds inside.
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <grp.h>
#include <linux/mount.h>
#include <unistd.h>

#if defined(__x86_64__)
#define ARCH AUDIT_ARCH_X86_64
#define NR_OPEN 2
#define NR_OPENAT 257
#define NR_STATX 332
static const int too_new[] = {332 /* statx */, 333 /* io_pgetevents */, 334 /* rseq */};
#elif defined(__aarch64__)
#define ARCH AUDIT_ARCH_AARCH64
#define NR_OPEN -1
#define NR_OPENAT 56
#define NR_STATX 291
static const int too_new[] = {291 /* statx */, 292 /* io_pgetevents */, 293 /* rseq */};
#else
#error "x86_64 or aarch64"
#endif
#define FIRST_UNIFIED 424 /* pidfd_send_signal: every syscall from here on is newer than a 4.14 kernel */

static void die(const char *what) {
  fprintf(stderr, "android: %s: %s\n", what, strerror(errno));
  exit(125);
}

static int init_main(void) {
  // Orphans are reparented here; a signal ends the phone (the kernel kills the rest of the namespace).
  signal(SIGTERM, SIG_DFL);
  umount2("/.oldroot", MNT_DETACH);
  rmdir("/.oldroot");
  for (;;)
    if (wait(NULL) < 0 && errno == ECHILD) pause();
  return 0;
}

#define STMT(code, k) ((struct sock_filter)BPF_STMT(code, k))
#define JUMP(code, k, t, f) ((struct sock_filter)BPF_JUMP(code, k, t, f))

/** The filter: too-new syscalls ENOSYS, opens to the supervisor, the rest allowed. */
static int install_filter(int notify_opens, int setgroups_noop) {
  struct sock_filter program[64];
  int n = 0;
  program[n++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch));
  program[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, ARCH, 1, 0);
  program[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  program[n++] = STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr));
  if (setgroups_noop) {
    program[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_setgroups, 0, 1);
    program[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | 0);
  }
  if (notify_opens) {
    for (size_t i = 0; i < sizeof too_new / sizeof *too_new; i++) {
      program[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, too_new[i], 0, 1);
      program[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
    }
    program[n++] = JUMP(BPF_JMP | BPF_JGE | BPF_K, FIRST_UNIFIED, 0, 1);
    program[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS);
    if (NR_OPEN >= 0) {
      program[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, (unsigned)NR_OPEN, 0, 1);
      program[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
    }
    program[n++] = JUMP(BPF_JMP | BPF_JEQ | BPF_K, NR_OPENAT, 0, 1);
    program[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF);
  }
  program[n++] = STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW);
  struct sock_fprog fprog = {.len = (unsigned short)n, .filter = program};
  unsigned flags = notify_opens ? SECCOMP_FILTER_FLAG_NEW_LISTENER : 0;
  int fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
  if (fd < 0) die("seccomp");
  return fd;
}

/** A NUL-terminated string of another process, read a page at a time (an unmapped page ends it). */
static int read_string(pid_t pid, unsigned long address, char *out, size_t size) {
  size_t have = 0;
  while (have < size - 1) {
    size_t page_left = 4096 - ((address + have) % 4096);
    size_t want = page_left < size - 1 - have ? page_left : size - 1 - have;
    struct iovec local = {out + have, want}, remote = {(void *)(address + have), want};
    ssize_t got = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (got <= 0) return -1;
    if (memchr(out + have, 0, (size_t)got)) return 0;
    have += (size_t)got;
  }
  out[size - 1] = 0;
  return 0;
}

static int is_digits(const char *start, size_t length) {
  if (!length) return 0;
  for (size_t i = 0; i < length; i++)
    if (start[i] < '0' || start[i] > '9') return 0;
  return 1;
}

/** "/proc/X/net..." where X is self, thread-self or a number, optionally ".../task/N": where it ends, or NULL. */
static const char *after_pid(const char *rest) {
  const char *slash = strchr(rest, '/');
  size_t length = slash ? (size_t)(slash - rest) : strlen(rest);
  if (!(is_digits(rest, length) || (length == 4 && !strncmp(rest, "self", 4)) ||
        (length == 11 && !strncmp(rest, "thread-self", 11))))
    return NULL;
  return slash ? slash + 1 : rest + length;
}

static int names_net(const char *rest) { return !strncmp(rest, "net", 3) && (rest[3] == 0 || rest[3] == '/'); }

/** What Android's policy denies an app under /proc (SPEC "Android and Termux"). */
static int denied(const char *path) {
  static const char *files[] = {"/proc/uptime", "/proc/stat", "/proc/loadavg", "/proc/version", "/proc/vmstat"};
  for (size_t i = 0; i < sizeof files / sizeof *files; i++)
    if (!strcmp(path, files[i])) return 1;
  if (strncmp(path, "/proc/", 6)) return 0;
  const char *rest = path + 6;
  if (names_net(rest)) return 1;
  rest = after_pid(rest);
  if (!rest) return 0;
  if (names_net(rest)) return 1;
  if (!strncmp(rest, "task/", 5)) {
    rest = after_pid(rest + 5);
    return rest && names_net(rest);
  }
  return 0;
}

/** An absolute path for openat(dirfd, path) as the target sees it, "//" and "/./" collapsed. */
static void absolute(pid_t pid, long dirfd, const char *path, char *out, size_t size) {
  char base[4096] = "";
  if (path[0] != '/') {
    char link[64];
    if (dirfd == AT_FDCWD || (int)dirfd == AT_FDCWD)
      snprintf(link, sizeof link, "/proc/%d/cwd", pid);
    else
      snprintf(link, sizeof link, "/proc/%d/fd/%d", pid, (int)dirfd);
    ssize_t got = readlink(link, base, sizeof base - 1);
    base[got > 0 ? got : 0] = 0;
  }
  char joined[8192];
  snprintf(joined, sizeof joined, "%s/%s", base, path);
  size_t n = 0;
  for (const char *p = joined; *p && n < size - 1;) {
    if (p[0] == '/' && p[1] == '/') { p++; continue; }
    if (p[0] == '/' && p[1] == '.' && (p[2] == '/' || p[2] == 0)) { p += 2; continue; }
    out[n++] = *p++;
  }
  if (n > 1 && out[n - 1] == '/') n--;
  out[n] = 0;
}

/** Judge every open of the sandboxed processes until none is left (POLLHUP). */
static void supervise(int listener) {
  struct seccomp_notif_sizes sizes;
  if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sizes) < 0) die("seccomp sizes");
  struct seccomp_notif *request = calloc(1, sizes.seccomp_notif);
  struct seccomp_notif_resp *response = calloc(1, sizes.seccomp_notif_resp);
  for (;;) {
    struct pollfd ready = {listener, POLLIN, 0};
    if (poll(&ready, 1, -1) < 0) {
      if (errno == EINTR) continue;
      die("poll");
    }
    if (ready.revents & POLLIN) {
      memset(request, 0, sizes.seccomp_notif);
      if (ioctl(listener, SECCOMP_IOCTL_NOTIF_RECV, request) < 0) continue; // the caller died meanwhile
      int is_openat = request->data.nr == NR_OPENAT;
      char path[4096], full[4096];
      int refuse = 0;
      if (read_string(request->pid, request->data.args[is_openat ? 1 : 0], path, sizeof path) == 0) {
        absolute(request->pid, is_openat ? (long)request->data.args[0] : AT_FDCWD, path, full, sizeof full);
        refuse = denied(full);
      }
      memset(response, 0, sizes.seccomp_notif_resp);
      response->id = request->id;
      if (refuse)
        response->error = -EACCES;
      else
        response->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
      ioctl(listener, SECCOMP_IOCTL_NOTIF_SEND, response); // ENOENT: it died meanwhile
    } else if (ready.revents & (POLLHUP | POLLERR | POLLNVAL)) {
      exit(0);
    }
  }
}

static void send_fd(int socket, int fd) {
  char data = 0;
  struct iovec io = {&data, 1};
  union { char buffer[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
  struct msghdr message = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof control.buffer};
  struct cmsghdr *header = CMSG_FIRSTHDR(&message);
  header->cmsg_level = SOL_SOCKET;
  header->cmsg_type = SCM_RIGHTS;
  header->cmsg_len = CMSG_LEN(sizeof(int));
  memcpy(CMSG_DATA(header), &fd, sizeof(int));
  if (sendmsg(socket, &message, 0) < 0) die("sendmsg");
}

static int receive_fd(int socket) {
  char data;
  struct iovec io = {&data, 1};
  union { char buffer[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } control;
  struct msghdr message = {.msg_iov = &io, .msg_iovlen = 1, .msg_control = control.buffer, .msg_controllen = sizeof control.buffer};
  if (recvmsg(socket, &message, 0) <= 0) return -1;
  struct cmsghdr *header = CMSG_FIRSTHDR(&message);
  if (!header) return -1;
  int fd;
  memcpy(&fd, CMSG_DATA(header), sizeof(int));
  return fd;
}

extern char **environ;

static pid_t forward_to;
static void forward(int signal) {
  if (forward_to > 0) kill(forward_to, signal);
}

static int run_main(int argc, char **argv) {
  long uid = 10123, gid = 10123;
  const char *cwd = "/";
  char **env = calloc((size_t)argc + 1, sizeof *env);
  int envc = 0, i = 2;
  for (; i < argc && strcmp(argv[i], "--"); i++) {
    if (!strcmp(argv[i], "--uid") && i + 1 < argc) uid = atol(argv[++i]);
    else if (!strcmp(argv[i], "--gid") && i + 1 < argc) gid = atol(argv[++i]);
    else if (!strcmp(argv[i], "--cwd") && i + 1 < argc) cwd = argv[++i];
    else if (!strcmp(argv[i], "--env") && i + 1 < argc) env[envc++] = argv[++i];
    else { fprintf(stderr, "android run: unknown %s\n", argv[i]); return 125; }
  }
  if (i >= argc - 1) { fprintf(stderr, "android run: -- ARGV... missing\n"); return 125; }
  char **command = argv + i + 1;
  int app = uid != 0;
  int pair[2];
  if (app && socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0) die("socketpair");
  pid_t child = fork();
  if (child < 0) die("fork");
  if (child == 0) {
    if (app) {
      close(pair[0]);
      if (setgroups(0, NULL) < 0) die("setgroups");
      if (setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) < 0) die("setresgid");
      if (setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0) die("setresuid");
      if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("no_new_privs");
      int listener = install_filter(1, 0);
      send_fd(pair[1], listener);
      close(listener);
      close(pair[1]);
    }
    if (chdir(cwd) < 0) chdir("/");
    environ = env;
    execvp(command[0], command);
    fprintf(stderr, "%s: %s\n", command[0], strerror(errno));
    _exit(errno == ENOENT ? 127 : 126);
  }
  if (app) {
    close(pair[1]);
    int listener = receive_fd(pair[0]);
    close(pair[0]);
    if (listener < 0) {
      int status;
      waitpid(child, &status, 0);
      return WIFEXITED(status) ? WEXITSTATUS(status) : 125;
    }
    // The supervisor outlives this run: what the app left running (a service, a loop) keeps opening files.
    pid_t supervisor = fork();
    if (supervisor == 0) {
      // As the app's uid: reading an app's memory and cwd then needs no CAP_SYS_PTRACE (a container drops it).
      if (setgroups(0, NULL) < 0 || setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) < 0 ||
          setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0)
        die("supervisor's uid");
      setsid();
      int null = open("/dev/null", O_RDWR);
      dup2(null, 0), dup2(null, 1), dup2(null, 2);
      supervise(listener);
    }
    close(listener);
  }
  // A signal to this process (the host's handle on the app) is the app's: a test stops a loop with SIGTERM.
  forward_to = child;
  struct sigaction action = {0};
  action.sa_handler = forward;
  for (int i = 0; i < 3; i++) sigaction((int[]){SIGTERM, SIGINT, SIGHUP}[i], &action, NULL);
  int status;
  while (waitpid(child, &status, 0) < 0)
    if (errno != EINTR) die("waitpid");
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/** What the kernel (through the filter) answers the syscalls an old phone lacks: one line each. */
static int syscalls_main(void) {
  struct { const char *name; long nr; long a, b, c, d, e; } calls[] = {
      {"statx", NR_STATX, AT_FDCWD, (long)"/", 0, 0x7ff, 0},
      {"pidfd_open", 434, 0, 0, 0, 0, 0},
      {"close_range", 436, 1000, 1001, 0, 0, 0},
      {"openat2", 437, AT_FDCWD, (long)"/", 0, 24, 0},
      {"fchmodat2", 452, AT_FDCWD, (long)"/nonexistent", 0, 0, 0},
  };
  static char buffer[4096];
  static long how[3];
  for (size_t i = 0; i < sizeof calls / sizeof *calls; i++) {
    long a = calls[i].a, b = calls[i].b, c = calls[i].c, d = calls[i].d, e = calls[i].e;
    if (!strcmp(calls[i].name, "statx")) e = (long)buffer;
    if (!strcmp(calls[i].name, "pidfd_open")) a = getpid();
    if (!strcmp(calls[i].name, "openat2")) c = (long)how;
    errno = 0;
    long result = syscall(calls[i].nr, a, b, c, d, e);
    printf("%s %s\n", calls[i].name, result >= 0 ? "ok" : errno == ENOSYS ? "ENOSYS" : strerror(errno));
  }
  return 0;
}

static int nosetgroups_main(int argc, char **argv) {
  int i = 2;
  if (i < argc && !strcmp(argv[i], "--")) i++;
  if (i >= argc) { fprintf(stderr, "android nosetgroups: ARGV missing\n"); return 125; }
  if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) die("no_new_privs");
  install_filter(0, 1);
  execvp(argv[i], argv + i);
  fprintf(stderr, "%s: %s\n", argv[i], strerror(errno));
  return 127;
}

/**
 * DST shows SRC with the files of host uid/gid ID shown as root's (an idmapped mount). busybox crond
 * loads only crontabs owned by root (its crontab(1) is setuid root); Termux's crond reads the app's own
 * file: crond is given the app's spool through this view. Root, before the phone pivots into its root.
 */
static int idmap_main(int argc, char **argv) {
  if (argc != 5 && argc != 6) { fprintf(stderr, "usage: android idmap SRC DST ID [PROC]\n"); return 125; }
  const char *proc = argc == 6 ? argv[5] : "/proc"; // the proc of this pid namespace (before the pivot: the new one)
  int tree = (int)syscall(SYS_open_tree, AT_FDCWD, argv[2], OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
  if (tree < 0) die("open_tree");
  int ready[2];
  if (pipe(ready) < 0) die("pipe");
  pid_t holder = fork();
  if (holder == 0) {
    // A user namespace for the mapping: its uid 0 is the host's ID.
    if (unshare(CLONE_NEWUSER) < 0) die("unshare");
    close(ready[1]);
    char byte;
    (void)!read(ready[0], &byte, 1); // until the mount has its mapping
    _exit(0);
  }
  close(ready[0]);
  char path[4096], map[64];
  snprintf(map, sizeof map, "%s 0 1\n", argv[4]); // the id on disk, as seen through the mount: root
  for (int i = 0; i < 2; i++) {
    snprintf(path, sizeof path, "%s/%d/%s", proc, holder, i ? "gid_map" : "uid_map");
    int fd;
    // The child may not have unshared yet: its map file is then its parent's (not writable): retried.
    for (int tries = 0;; tries++) {
      fd = open(path, O_WRONLY);
      if (fd >= 0 && write(fd, map, strlen(map)) == (ssize_t)strlen(map)) break;
      if (fd >= 0) close(fd);
      if (tries > 1000) die(path);
      usleep(1000);
    }
    close(fd);
  }
  snprintf(path, sizeof path, "%s/%d/ns/user", proc, holder);
  int userns = open(path, O_RDONLY | O_CLOEXEC);
  if (userns < 0) die("userns");
  struct mount_attr attr = {.attr_set = MOUNT_ATTR_IDMAP, .userns_fd = (unsigned)userns};
  if (syscall(SYS_mount_setattr, tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0) die("mount_setattr");
  if (syscall(SYS_move_mount, tree, "", AT_FDCWD, argv[3], MOVE_MOUNT_F_EMPTY_PATH) < 0) die("move_mount");
  close(ready[1]);
  waitpid(holder, NULL, 0);
  return 0;
}

// Android's build properties come from /system/build.prop (KEY=VALUE lines) and the property service; the
// phone's build.prop is written at its boot with the API level its test chose (test/termux.ts apiLevel).
static int getprop_main(int argc, char **argv) {
  FILE *props = fopen("/system/build.prop", "r");
  if (!props) {
    fprintf(stderr, "getprop: /system/build.prop: %s\n", strerror(errno));
    return 1;
  }
  char line[512];
  int found = 0;
  while (fgets(line, sizeof line, props)) {
    line[strcspn(line, "\n")] = 0;
    char *equals = strchr(line, '=');
    if (line[0] == '#' || !equals) continue;
    *equals = 0;
    if (argc < 2) printf("[%s]: [%s]\n", line, equals + 1);
    else if (!strcmp(argv[1], line) && !found) {
      printf("%s\n", equals + 1);
      found = 1;
    }
  }
  fclose(props);
  if (argc >= 2 && !found) printf("\n"); // Android's getprop prints an empty line for an unknown property
  return 0;
}

int main(int argc, char **argv) {
  const char *name = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
  if (!strcmp(name, "sh")) {
    fprintf(stderr, "/system/bin/sh: this is Android's mksh, not Termux's shell: run sh from PATH\n");
    return 127;
  }
  if (!strcmp(name, "getprop")) return getprop_main(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "init")) return init_main();
  if (argc >= 2 && !strcmp(argv[1], "run")) return run_main(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "nosetgroups")) return nosetgroups_main(argc, argv);
  if (argc >= 2 && !strcmp(argv[1], "syscalls")) return syscalls_main();
  if (argc >= 2 && !strcmp(argv[1], "idmap")) return idmap_main(argc, argv);
  fprintf(stderr, "usage: android init | run [--uid N] [--gid N] [--cwd DIR] [--env K=V]... -- ARGV | nosetgroups -- ARGV\n");
  return 125;
}
