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
#include <spawn.h>

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

// MARK: Sockets (numeric IPv4/IPv6 addresses; "localhost" means 127.0.0.1).

/// 1 when `host` is a numeric IPv4/IPv6 address or "localhost", else 0.
int rave_tcp_is_numeric_host(const char *host);
/// Creates a non-blocking, close-on-exec TCP socket for `host`'s family; -1 with errno on failure
/// (EINVAL when `host` is not numeric).
int rave_tcp_socket_for(const char *host);
/// Binds to host:port with SO_REUSEADDR and listens; -1 with errno set.
int rave_tcp_bind_listen(int fd, const char *host, int port, int backlog);
/// Starts a non-blocking connect; 0 when connected, -1 with errno (EINPROGRESS while pending).
int rave_tcp_connect(int fd, const char *host, int port);
/// Accepts one connection as non-blocking and close-on-exec, writing "ip:port" of the peer into `address`.
int rave_tcp_accept(int fd, char *address, size_t capacity);
/// Writes "ip:port" of the peer into `address`; -1 with errno on failure.
int rave_tcp_peer_address(int fd, char *address, size_t capacity);
/// The locally bound port, or -1 with errno.
int rave_tcp_local_port(int fd);
/// The pending socket error (SO_ERROR), or -1 with errno when it cannot be read.
int rave_tcp_pending_error(int fd);
int rave_tcp_set_nodelay(int fd);

/// A per-thread scratch buffer of `size` bytes (allocated once per thread, freed at thread exit), so every
/// channel on an event loop reads into the same memory instead of holding a buffer of its own.
void *rave_thread_scratch_buffer(size_t size);

// MARK: Heap (glibc malloc)

/// Fixes glibc malloc's mmap threshold and trim threshold (bytes) and its most arenas; 0 leaves a setting as it
/// is. A fixed threshold also stops glibc from raising it after the process frees a large block, which would
/// keep later large buffers on the heap. Returns 1 when every setting was taken.
int rave_malloc_configure(size_t mmap_threshold, size_t trim_threshold, int arena_max);
/// Bytes malloc holds as free chunks in every arena (mallinfo2's fordblks): at most what a trim gives back.
size_t rave_malloc_free_bytes(void);
/// Hands free heap pages of every arena back to the system (malloc_trim(0)); 1 when some memory was released.
int rave_malloc_trim(void);
/// The process's resident set size in bytes (from /proc/self/statm), or 0 when it cannot be read.
size_t rave_resident_bytes(void);

// MARK: Spawning (the GNU additions to posix_spawn that Swift's Glibc module hides)

/// A pipe whose two ends are close-on-exec (pipe2 with O_CLOEXEC); 0, or -1 with errno.
int rave_pipe_cloexec(int ends[2]);
/// Adds "change to `directory`" to a spawn's file actions; 0 or an error number.
int rave_spawn_add_chdir(posix_spawn_file_actions_t *actions, const char *directory);
/// Adds "close every descriptor from `lowest` up" to a spawn's file actions; 0 or an error number.
int rave_spawn_add_close_from(posix_spawn_file_actions_t *actions, int lowest);

uint32_t rave_epollin(void);
uint32_t rave_epollout(void);
uint32_t rave_epollerr(void);
uint32_t rave_epollhup(void);
uint32_t rave_epollrdhup(void);
uint32_t rave_epollet(void);

#endif
