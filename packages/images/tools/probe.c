/*
 * The kubelet's exec probe of a launcher whose guest took the pod's address
 * (the bridge binding): the kubelet's HTTP probes would reach the guest, so
 * it runs this in the launcher container instead, which asks the launcher on
 * loopback as the kubelet would have.
 *
 *   kubevirt-ts-probe PORT PATH
 *
 * Exits 0 on an answer of 200 to 399 (the kubelet's success), 1 otherwise,
 * printing what the launcher said (at most 1 KiB), which the kubelet shows in
 * the probe's event. The kubelet's timeout bounds it; a launcher that does
 * not answer within 30 seconds fails it too.
 */
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#define ANSWER_BYTES 1024

int main(int argc, char **argv) {
  if (argc != 3 || argv[2][0] != '/' || strlen(argv[2]) > 256) {
    fputs("usage: kubevirt-ts-probe PORT /PATH\n", stderr);
    return 2;
  }
  long port = strtol(argv[1], NULL, 10);
  if (port < 1 || port > 65535) {
    fputs("kubevirt-ts-probe: PORT must be 1 to 65535\n", stderr);
    return 2;
  }
  alarm(30);
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  struct sockaddr_in to = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
  to.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (fd < 0 || connect(fd, (struct sockaddr *)&to, sizeof to) != 0) {
    perror("kubevirt-ts-probe: the launcher's port");
    return 1;
  }
  char request[512];
  int length = snprintf(request, sizeof request, "GET %s HTTP/1.0\r\nHost: localhost\r\n\r\n", argv[2]);
  if (write(fd, request, (size_t)length) != length) {
    perror("kubevirt-ts-probe: asking the launcher");
    return 1;
  }
  char answer[ANSWER_BYTES + 1];
  size_t have = 0;
  ssize_t got;
  while (have < ANSWER_BYTES && (got = read(fd, answer + have, ANSWER_BYTES - have)) > 0) have += (size_t)got;
  answer[have] = '\0';
  close(fd);
  /* "HTTP/1.x NNN ...": the status is the second word. */
  const char *space = strchr(answer, ' ');
  int status = space != NULL && strncmp(answer, "HTTP/", 5) == 0 ? atoi(space + 1) : 0;
  const char *body = strstr(answer, "\r\n\r\n");
  fputs(body != NULL ? body + 4 : answer, stdout);
  fputc('\n', stdout);
  return status >= 200 && status < 400 ? 0 : 1;
}
