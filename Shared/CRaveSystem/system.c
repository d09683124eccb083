#include "CRaveSystem.h"

#include <errno.h>
#include <fcntl.h>
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
