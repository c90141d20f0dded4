/*
 * kubevirt-ts-disk-copy SOURCE TARGET-DIR
 *
 * Runs inside a containerDisk image, which holds nothing but its disk (no
 * shell, no cp): copies the disk file SOURCE, or every regular file in the
 * folder SOURCE, into TARGET-DIR, a volume the launcher shares. Built static
 * so that it runs in any image.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char buffer[1 << 20];

static int copy_file(const char *from, const char *dir, const char *name) {
  char to[4096];
  if (snprintf(to, sizeof to, "%s/%s", dir, name) >= (int)sizeof to) {
    fprintf(stderr, "disk-copy: target path too long for %s\n", name);
    return 1;
  }
  int in = open(from, O_RDONLY);
  if (in < 0) {
    fprintf(stderr, "disk-copy: cannot read %s: %s (the disk must be readable by the launcher's user, 107)\n", from, strerror(errno));
    return 1;
  }
  int out = open(to, O_WRONLY | O_CREAT | O_TRUNC, 0640);
  if (out < 0) {
    fprintf(stderr, "disk-copy: cannot write %s: %s\n", to, strerror(errno));
    close(in);
    return 1;
  }
  ssize_t n;
  while ((n = read(in, buffer, sizeof buffer)) > 0) {
    for (ssize_t done = 0; done < n;) {
      ssize_t w = write(out, buffer + done, (size_t)(n - done));
      if (w < 0) {
        fprintf(stderr, "disk-copy: writing %s failed: %s\n", to, strerror(errno));
        close(in);
        close(out);
        return 1;
      }
      done += w;
    }
  }
  close(in);
  if (n < 0 || close(out) != 0) {
    fprintf(stderr, "disk-copy: copying %s failed: %s\n", from, strerror(errno));
    return 1;
  }
  printf("disk-copy: %s -> %s\n", from, to);
  return 0;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    fprintf(stderr, "usage: kubevirt-ts-disk-copy SOURCE TARGET-DIR\n");
    return 2;
  }
  const char *source = argv[1], *target = argv[2];
  if (mkdir(target, 0750) != 0 && errno != EEXIST) {
    fprintf(stderr, "disk-copy: cannot create %s: %s\n", target, strerror(errno));
    return 1;
  }
  struct stat st;
  if (stat(source, &st) != 0) {
    fprintf(stderr, "disk-copy: %s is not in the image: %s\n", source, strerror(errno));
    return 1;
  }
  if (S_ISREG(st.st_mode)) {
    const char *slash = strrchr(source, '/');
    return copy_file(source, target, slash ? slash + 1 : source);
  }
  DIR *dir = opendir(source);
  if (!dir) {
    fprintf(stderr, "disk-copy: cannot list %s: %s\n", source, strerror(errno));
    return 1;
  }
  int copied = 0, failed = 0;
  struct dirent *entry;
  while ((entry = readdir(dir)) != NULL) {
    char from[4096];
    if (snprintf(from, sizeof from, "%s/%s", source, entry->d_name) >= (int)sizeof from) continue;
    if (lstat(from, &st) != 0 || !S_ISREG(st.st_mode)) continue;
    failed |= copy_file(from, target, entry->d_name);
    copied++;
  }
  closedir(dir);
  if (copied == 0) {
    fprintf(stderr, "disk-copy: %s holds no disk file\n", source);
    return 1;
  }
  return failed;
}
