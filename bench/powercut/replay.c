/*
 * replay: the disk as a power cut after the Nth logged write left it. The log is QEMU's
 * blklogwrites (dm-log-writes' format: a super block, then per write an entry sector and its data).
 *   replay LOG                  print the number of entries and how many are flushes
 *   replay BASE LOG OUT N       OUT = BASE with the first N entries' writes applied
 * Built static (gcc -static) so it runs in the checking VM's initramfs too.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOG_FLUSH_FLAG (1 << 0)
#define LOG_DISCARD_FLAG (1 << 2)
#define LOG_MARK_FLAG (1 << 3)
#define WRITE_LOG_MAGIC 0x6a736677736872ULL

struct super { uint64_t magic, version, nr_entries; uint32_t sectorsize; };
struct entry { uint64_t sector, nr_sectors, flags, data_len; };

static void die(const char *what) { perror(what); exit(1); }

static void copy(const char *from, const char *to) {
  int in = open(from, O_RDONLY), out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (in < 0 || out < 0) die("open");
  static char buf[1 << 20];
  ssize_t n;
  while ((n = read(in, buf, sizeof buf)) > 0)
    if (write(out, buf, n) != n) die("write");
  close(in);
  close(out);
}

int main(int argc, char **argv) {
  if (argc != 2 && argc != 5) {
    fprintf(stderr, "usage: replay LOG | replay BASE LOG OUT N\n");
    return 2;
  }
  const char *logPath = argc == 2 ? argv[1] : argv[2];
  int log = open(logPath, O_RDONLY);
  if (log < 0) die(logPath);
  struct super super;
  if (pread(log, &super, sizeof super, 0) != sizeof super || super.magic != WRITE_LOG_MAGIC) {
    fprintf(stderr, "%s: not a write log\n", logPath);
    return 1;
  }
  uint64_t size = super.sectorsize, limit = argc == 5 ? strtoull(argv[4], 0, 10) : super.nr_entries;
  int out = -1;
  if (argc == 5) {
    copy(argv[1], argv[3]);
    out = open(argv[3], O_WRONLY);
    if (out < 0) die(argv[3]);
  }
  char *data = malloc(1 << 24);
  uint64_t at = 1, flushes = 0, n;
  for (n = 0; n < super.nr_entries && n < limit; n++) {
    struct entry entry;
    if (pread(log, &entry, sizeof entry, at * size) != sizeof entry) break;
    at++;
    uint64_t bytes = entry.nr_sectors * size;
    if (entry.flags & LOG_FLUSH_FLAG) flushes++;
    if (bytes && !(entry.flags & LOG_DISCARD_FLAG)) {
      if (bytes > (1 << 24)) { fprintf(stderr, "entry %llu too large\n", (unsigned long long)n); return 1; }
      if (pread(log, data, bytes, at * size) != (ssize_t)bytes) die("read entry");
      if (out >= 0 && pwrite(out, data, bytes, entry.sector * size) != (ssize_t)bytes) die("apply");
    }
    if (!(entry.flags & LOG_DISCARD_FLAG)) at += entry.nr_sectors;
  }
  if (out >= 0) close(out);
  printf("%llu %llu\n", (unsigned long long)n, (unsigned long long)flushes);
  return 0;
}
