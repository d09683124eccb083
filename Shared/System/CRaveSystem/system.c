#define _GNU_SOURCE
#include "CRaveSystem.h"

#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int rave_epoll_create(void) { return epoll_create1(EPOLL_CLOEXEC); }

int rave_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data) {
    struct epoll_event event;
    memset(&event, 0, sizeof event);
    event.events = events;
    event.data.u64 = data;
    return epoll_ctl(epfd, op, fd, op == EPOLL_CTL_DEL ? NULL : &event);
}

int rave_epoll_wait(int epfd, rave_epoll_event *events, int max_events, int timeout_ms) {
    struct epoll_event raw[256];
    if (max_events > 256) max_events = 256;
    int count = epoll_wait(epfd, raw, max_events, timeout_ms);
    for (int i = 0; i < count; i++) {
        events[i].events = raw[i].events;
        events[i].data = raw[i].data.u64;
    }
    return count;
}

int rave_eventfd_create(void) { return eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK); }

int rave_eventfd_signal(int fd) {
    uint64_t one = 1;
    ssize_t written = write(fd, &one, sizeof one);
    // EAGAIN means the counter is saturated: the loop is already due to wake.
    return (written == sizeof one || errno == EAGAIN) ? 0 : -1;
}

int rave_eventfd_drain(int fd) {
    uint64_t value;
    ssize_t got = read(fd, &value, sizeof value);
    return (got == sizeof value || errno == EAGAIN) ? 0 : -1;
}

int rave_timerfd_create(void) { return timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK); }

int rave_timerfd_arm(int fd, uint64_t deadline_ns) {
    struct itimerspec spec;
    memset(&spec, 0, sizeof spec);
    spec.it_value.tv_sec = (time_t)(deadline_ns / 1000000000ull);
    spec.it_value.tv_nsec = (long)(deadline_ns % 1000000000ull);
    return timerfd_settime(fd, TFD_TIMER_ABSTIME, &spec, NULL);
}

int rave_timerfd_drain(int fd) {
    uint64_t expirations;
    ssize_t got = read(fd, &expirations, sizeof expirations);
    return (got == sizeof expirations || errno == EAGAIN) ? 0 : -1;
}

uint64_t rave_monotonic_ns(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (uint64_t)now.tv_sec * 1000000000ull + (uint64_t)now.tv_nsec;
}

int rave_set_nonblocking(int fd) {
    int flags = fcntl(fd, F_GETFL, 0);
    if (flags < 0) return -1;
    return fcntl(fd, F_SETFL, flags | O_NONBLOCK);
}

int rave_set_cloexec(int fd) {
    int flags = fcntl(fd, F_GETFD, 0);
    if (flags < 0) return -1;
    return fcntl(fd, F_SETFD, flags | FD_CLOEXEC);
}

void rave_ignore_sigpipe(void) { signal(SIGPIPE, SIG_IGN); }

uint32_t rave_epollin(void) { return EPOLLIN; }
uint32_t rave_epollout(void) { return EPOLLOUT; }
uint32_t rave_epollerr(void) { return EPOLLERR; }
uint32_t rave_epollhup(void) { return EPOLLHUP; }
uint32_t rave_epollrdhup(void) { return EPOLLRDHUP; }
uint32_t rave_epollet(void) { return EPOLLET; }

// MARK: - Sockets

#include <arpa/inet.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static int parse_address(const char *host, int port, struct sockaddr_storage *storage, socklen_t *length) {
    memset(storage, 0, sizeof *storage);
    if (strcmp(host, "localhost") == 0) host = "127.0.0.1";
    struct sockaddr_in *v4 = (struct sockaddr_in *)storage;
    if (inet_pton(AF_INET, host, &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons((uint16_t)port);
        *length = sizeof *v4;
        return AF_INET;
    }
    struct sockaddr_in6 *v6 = (struct sockaddr_in6 *)storage;
    if (inet_pton(AF_INET6, host, &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons((uint16_t)port);
        *length = sizeof *v6;
        return AF_INET6;
    }
    return -1;
}

static void format_address(const struct sockaddr_storage *storage, char *out, size_t capacity) {
    char text[INET6_ADDRSTRLEN] = "?";
    if (storage->ss_family == AF_INET) {
        const struct sockaddr_in *v4 = (const struct sockaddr_in *)storage;
        inet_ntop(AF_INET, &v4->sin_addr, text, sizeof text);
        snprintf(out, capacity, "%s:%u", text, ntohs(v4->sin_port));
    } else if (storage->ss_family == AF_INET6) {
        const struct sockaddr_in6 *v6 = (const struct sockaddr_in6 *)storage;
        inet_ntop(AF_INET6, &v6->sin6_addr, text, sizeof text);
        snprintf(out, capacity, "[%s]:%u", text, ntohs(v6->sin6_port));
    } else {
        snprintf(out, capacity, "unknown");
    }
}

int rave_tcp_is_numeric_host(const char *host) {
    struct sockaddr_storage storage;
    socklen_t length;
    return parse_address(host, 0, &storage, &length) >= 0;
}

int rave_tcp_socket_for(const char *host) {
    struct sockaddr_storage storage;
    socklen_t length;
    int family = parse_address(host, 0, &storage, &length);
    if (family < 0) {
        errno = EINVAL;
        return -1;
    }
    return socket(family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

int rave_tcp_bind_listen(int fd, const char *host, int port, int backlog) {
    struct sockaddr_storage storage;
    socklen_t length;
    if (parse_address(host, port, &storage, &length) < 0) {
        errno = EINVAL;
        return -1;
    }
    int one = 1;
    if (setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0) return -1;
    if (bind(fd, (struct sockaddr *)&storage, length) < 0) return -1;
    return listen(fd, backlog);
}

int rave_tcp_connect(int fd, const char *host, int port) {
    struct sockaddr_storage storage;
    socklen_t length;
    if (parse_address(host, port, &storage, &length) < 0) {
        errno = EINVAL;
        return -1;
    }
    return connect(fd, (struct sockaddr *)&storage, length);
}

int rave_tcp_accept(int fd, char *address, size_t capacity) {
    struct sockaddr_storage storage;
    socklen_t length = sizeof storage;
    int client = accept4(fd, (struct sockaddr *)&storage, &length, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (client >= 0) format_address(&storage, address, capacity);
    return client;
}

int rave_tcp_peer_address(int fd, char *address, size_t capacity) {
    struct sockaddr_storage storage;
    socklen_t length = sizeof storage;
    if (getpeername(fd, (struct sockaddr *)&storage, &length) < 0) return -1;
    format_address(&storage, address, capacity);
    return 0;
}

int rave_tcp_local_port(int fd) {
    struct sockaddr_storage storage;
    socklen_t length = sizeof storage;
    if (getsockname(fd, (struct sockaddr *)&storage, &length) < 0) return -1;
    if (storage.ss_family == AF_INET) return ntohs(((struct sockaddr_in *)&storage)->sin_port);
    return ntohs(((struct sockaddr_in6 *)&storage)->sin6_port);
}

int rave_tcp_pending_error(int fd) {
    int error = 0;
    socklen_t length = sizeof error;
    if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length) < 0) return -1;
    return error;
}

int rave_tcp_set_nodelay(int fd) {
    int one = 1;
    return setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

// MARK: - Per-thread scratch memory

static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;

static void make_scratch_key(void) { pthread_key_create(&scratch_key, free); }

void *rave_thread_scratch_buffer(size_t size) {
    pthread_once(&scratch_once, make_scratch_key);
    void *buffer = pthread_getspecific(scratch_key);
    if (buffer == NULL) {
        buffer = malloc(size);
        pthread_setspecific(scratch_key, buffer);
    }
    return buffer;
}

int rave_malloc_configure(size_t mmap_threshold, size_t trim_threshold, int arena_max) {
    int ok = 1;
    if (mmap_threshold > 0 && mallopt(M_MMAP_THRESHOLD, (int)mmap_threshold) != 1) ok = 0;
    if (trim_threshold > 0 && mallopt(M_TRIM_THRESHOLD, (int)trim_threshold) != 1) ok = 0;
    if (arena_max > 0 && mallopt(M_ARENA_MAX, arena_max) != 1) ok = 0;
    return ok;
}

size_t rave_malloc_free_bytes(void) { return mallinfo2().fordblks; }

int rave_malloc_trim(void) { return malloc_trim(0); }

size_t rave_resident_bytes(void) {
    FILE *file = fopen("/proc/self/statm", "re");
    if (file == NULL) return 0;
    unsigned long size = 0, resident = 0;
    int fields = fscanf(file, "%lu %lu", &size, &resident);
    fclose(file);
    if (fields != 2) return 0;
    return (size_t)resident * (size_t)sysconf(_SC_PAGESIZE);
}

int rave_pipe_cloexec(int ends[2]) { return pipe2(ends, O_CLOEXEC); }

int rave_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *directory) {
    return posix_spawn_file_actions_addchdir_np(actions, directory);
}

int rave_spawn_add_close_from(posix_spawn_file_actions_t *actions, int lowest) {
    return posix_spawn_file_actions_addclosefrom_np(actions, lowest);
}
