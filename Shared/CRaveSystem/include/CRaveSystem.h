#ifndef C_RAVE_SYSTEM_H
#define C_RAVE_SYSTEM_H

// Linux system calls Swift's Glibc module does not export (epoll, eventfd,
// timerfd) and small wrappers for things Swift cannot call directly
// (variadic fcntl, the packed epoll_event layout, errno-free signal masks).

#include <stdint.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>

/// One readiness event with the packed kernel layout flattened out.
typedef struct {
    uint32_t events;
    uint64_t data;
} rave_epoll_event;

int rave_epoll_create(void);
int rave_epoll_ctl(int epfd, int op, int fd, uint32_t events, uint64_t data);
/// Waits for events; returns the count or -1 with errno set.
int rave_epoll_wait(int epfd, rave_epoll_event *events, int max_events, int timeout_ms);

int rave_eventfd_create(void);
int rave_eventfd_signal(int fd);
int rave_eventfd_drain(int fd);

int rave_timerfd_create(void);
/// Arms the timer for an absolute CLOCK_MONOTONIC time in nanoseconds; 0 disarms it.
int rave_timerfd_arm(int fd, uint64_t deadline_ns);
int rave_timerfd_drain(int fd);

/// Current CLOCK_MONOTONIC time in nanoseconds.
uint64_t rave_monotonic_ns(void);

int rave_set_nonblocking(int fd);
int rave_set_cloexec(int fd);

/// Blocks SIGPIPE for the whole process (writes to a closed socket return EPIPE instead).
void rave_ignore_sigpipe(void);

uint32_t rave_epollin(void);
uint32_t rave_epollout(void);
uint32_t rave_epollerr(void);
uint32_t rave_epollhup(void);
uint32_t rave_epollrdhup(void);
uint32_t rave_epollet(void);

#endif
