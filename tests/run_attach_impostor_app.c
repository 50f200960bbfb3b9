/* A hostile "attachable program" for `opscope run -p PID` run by root (tests/run_attach_cli_test):
 *   run_attach_impostor_app UID MODE SECRET_DIR
 * drops to UID, makes the channel /tmp/opscope-attach-<pid>-annotate itself (the recorder in
 * LD_PRELOAD stays inert: OPSCOPE_ATTACHABLE is unset, but opscope sees the library mapped) and
 * answers opscope's request as the recorder would, planting in the output folder opscope handed
 * it what an attacker of that uid could:
 *   symlink      ranges.annotate.<pid> -> SECRET_DIR/secret (a root-only file)
 *   fifo         ranges.annotate.<pid> is a FIFO nobody writes to
 *   devzero      ranges.annotate.<pid> -> /dev/zero
 *   hardlink     ranges.annotate.<pid> has a second link
 *   marker-fifo  attached.annotate is a FIFO
 *   swap         the output folder is renamed away and replaced by a symbolic link to
 *                SECRET_DIR/victim (root's), then the records go into the moved folder
 * A range file it writes itself holds one range "planted". It prints the output folder's path
 * and runs until killed (at most 120 s). */
#define _GNU_SOURCE
#include <fcntl.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static long long NowNs(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Written under a temporary name and renamed in, as the recorder does. */
static int WriteAt(int dirfd, const char* name, const char* text) {
  char tmp[256];
  snprintf(tmp, sizeof tmp, ".%s.tmp", name);
  int fd = openat(dirfd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return -1;
  ssize_t n = write(fd, text, strlen(text));
  close(fd);
  if (n != (ssize_t)strlen(text)) return -1;
  return renameat(dirfd, tmp, dirfd, name);
}

static int Waited(const char* path, time_t start) {
  while (access(path, F_OK) != 0) {
    if (time(NULL) - start > 120) return 0;
    usleep(5000);
  }
  return 1;
}

int main(int argc, char** argv) {
  if (argc < 4) {
    fprintf(stderr, "usage: run_attach_impostor_app UID MODE SECRET_DIR\n");
    return 2;
  }
  const uid_t uid = (uid_t)atol(argv[1]);
  const char* mode = argv[2];
  const char* secret_dir = argv[3];
  if (setgroups(0, NULL) != 0 || setgid(uid) != 0 || setuid(uid) != 0) {
    perror("dropping to the uid");
    return 2;
  }
  prctl(PR_SET_DUMPABLE, 1, 0, 0, 0); /* /proc/PID stays this uid's, as for any program */
  const time_t start = time(NULL);
  char channel[256], request[300], stop[300];
  snprintf(channel, sizeof channel, "/tmp/opscope-attach-%d-annotate", (int)getpid());
  snprintf(request, sizeof request, "%s/request", channel);
  snprintf(stop, sizeof stop, "%s/stop", channel);
  if (mkdir(channel, 0700) != 0) {
    perror(channel);
    return 2;
  }
  if (!Waited(request, start)) return 3;
  char text[4096] = {0};
  FILE* f = fopen(request, "r");
  if (f == NULL) {
    perror(request);
    return 2;
  }
  size_t got = fread(text, 1, sizeof text - 1, f);
  fclose(f);
  text[got] = '\0';
  const char* out_line = strstr(text, "\nout ");
  if (out_line == NULL) return 2;
  char out[1024];
  snprintf(out, sizeof out, "%s", out_line + 5);
  out[strcspn(out, "\n")] = '\0';
  printf("%s\n", out); /* for the test to clean up what is left */
  fflush(stdout);
  const int out_fd = open(out, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
  if (out_fd < 0) {
    perror(out);
    return 2;
  }
  char ranges[64], line[128], secret[1200];
  snprintf(ranges, sizeof ranges, "ranges.annotate.%d", (int)getpid());
  if (strcmp(mode, "marker-fifo") == 0) {
    mkfifoat(out_fd, "attached.annotate", 0600);
  } else {
    snprintf(line, sizeof line, "attached %lld\n", NowNs());
    WriteAt(out_fd, "attached.annotate", line);
  }
  if (strcmp(mode, "swap") == 0) {
    char moved[1100];
    snprintf(moved, sizeof moved, "%s.moved", out);
    snprintf(secret, sizeof secret, "%s/victim", secret_dir);
    if (rename(out, moved) != 0 || symlink(secret, out) != 0) perror("swapping the folder");
  }
  if (!Waited(stop, start)) return 3;
  /* The records, then the marker. */
  char records[512];
  snprintf(records, sizeof records,
           "opscope-ranges 1\npid %d\nsource annotate\nname 0 planted\ndomain 0 opscope\n"
           "range P %d %lld %lld 0 0 0 -1\n",
           (int)getpid(), (int)getpid(), NowNs() - 1000000, NowNs() - 500000);
  snprintf(secret, sizeof secret, "%s/secret", secret_dir);
  if (strcmp(mode, "symlink") == 0) {
    symlinkat(secret, out_fd, ranges);
  } else if (strcmp(mode, "fifo") == 0) {
    mkfifoat(out_fd, ranges, 0600);
  } else if (strcmp(mode, "devzero") == 0) {
    symlinkat("/dev/zero", out_fd, ranges);
  } else if (strcmp(mode, "hardlink") == 0) {
    WriteAt(out_fd, ranges, records);
    linkat(out_fd, ranges, out_fd, "second-link", 0);
  } else {
    WriteAt(out_fd, ranges, records);
  }
  snprintf(line, sizeof line, "stop 0 %lld\n", NowNs());
  WriteAt(out_fd, "done.annotate", line);
  while (time(NULL) - start < 120) sleep(1);
  return 0;
}
