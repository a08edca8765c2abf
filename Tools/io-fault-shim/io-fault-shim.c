// SPDX-FileCopyrightText: 2026 the SpeziAccountStore authors (see CONTRIBUTORS.md)
// SPDX-License-Identifier: MIT
//
// An LD_PRELOAD library for the reliability tests: it sits between a process and the C library's
// file calls and can (a) fail chosen calls with a chosen errno and (b) record what a power loss
// would take away. It only touches files whose path ends with one of the suffixes in
// IOFAULT_FILES (comma-separated, e.g. "data.mdb,vault"); every other file is left alone.
//
// Power loss (IOFAULT_POWER_LOSS=1): before each write to a watched file through a descriptor
// that is not O_DSYNC/O_SYNC, the bytes about to be overwritten are appended to "<file>.unsynced"
// (the undo journal). A successful fdatasync or fsync of the file empties its journal: from then
// on those writes are on disk. After the process is killed, undoing the journal's records newest
// first and truncating the file to the size it had at the last flush gives the file as the disk
// would hold it had the power failed at that moment: every write not yet flushed is gone.
// Journal record: u64 offset, u64 length, u64 file size before the write, then the old bytes
// (little-endian; the length counts only the bytes that existed before the write).
//
// Faults (IOFAULT_FAIL="call:errno:first[:count]", call one of fdatasync, fsync, pwrite (also
// pwritev), write (also writev),
// errno one of EIO, ENOSPC, EDQUOT): the first-th call of that kind on a watched file and the
// count-1 after it (default: all after it) fail with the errno and do nothing. Each failure is
// noted on standard error as "iofault: <call> failed with <errno>".
//
// Build: cc -shared -fPIC -O2 -o libiofault.so io-fault-shim.c -ldl

#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FDS 1024

enum call { CALL_NONE, CALL_FDATASYNC, CALL_FSYNC, CALL_PWRITE, CALL_WRITE };

struct watched {
    int active;
    int synchronous;   // opened with O_DSYNC or O_SYNC: each write is flushed by itself
    int journal;       // descriptor of "<file>.unsynced", or -1
};

static struct watched fds[MAX_FDS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static ssize_t (*real_pwritev)(int, const struct iovec *, int, off_t);
static ssize_t (*real_pread64)(int, void *, size_t, off_t);
static int (*real_fdatasync)(int);
static int (*real_fsync)(int);

static char suffixes[1024];
static int power_loss;
static enum call fail_call = CALL_NONE;
static int fail_errno;
static long fail_first, fail_count = -1;
static long calls_seen;

static enum call parse_call(const char *name) {
    if (strcmp(name, "fdatasync") == 0) return CALL_FDATASYNC;
    if (strcmp(name, "fsync") == 0) return CALL_FSYNC;
    if (strcmp(name, "pwrite") == 0) return CALL_PWRITE;
    if (strcmp(name, "write") == 0) return CALL_WRITE;
    return CALL_NONE;
}

static const char *call_name(enum call c) {
    switch (c) {
    case CALL_FDATASYNC: return "fdatasync";
    case CALL_FSYNC: return "fsync";
    case CALL_PWRITE: return "pwrite";
    case CALL_WRITE: return "write";
    default: return "?";
    }
}

static void setup(void) {
    real_open = dlsym(RTLD_NEXT, "open");
    real_open64 = dlsym(RTLD_NEXT, "open64");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_openat64 = dlsym(RTLD_NEXT, "openat64");
    real_close = dlsym(RTLD_NEXT, "close");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real_write = dlsym(RTLD_NEXT, "write");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_pwritev = dlsym(RTLD_NEXT, "pwritev");
    real_pread64 = dlsym(RTLD_NEXT, "pread64");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    for (int i = 0; i < MAX_FDS; i++) fds[i].journal = -1;

    const char *files = getenv("IOFAULT_FILES");
    if (files) snprintf(suffixes, sizeof suffixes, "%s", files);
    const char *loss = getenv("IOFAULT_POWER_LOSS");
    power_loss = loss && strcmp(loss, "1") == 0;

    const char *fail = getenv("IOFAULT_FAIL");
    if (fail) {
        char spec[128], *save = NULL;
        snprintf(spec, sizeof spec, "%s", fail);
        char *name = strtok_r(spec, ":", &save), *err = strtok_r(NULL, ":", &save);
        char *first = strtok_r(NULL, ":", &save), *count = strtok_r(NULL, ":", &save);
        if (name && err && first) {
            fail_call = parse_call(name);
            fail_errno = strcmp(err, "ENOSPC") == 0 ? ENOSPC : strcmp(err, "EDQUOT") == 0 ? EDQUOT : EIO;
            fail_first = atol(first);
            if (count) fail_count = atol(count);
        }
    }
}

static void init(void) { pthread_once(&once, setup); }

static int matches(const char *path) {
    if (!path || !suffixes[0]) return 0;
    size_t length = strlen(path);
    char list[1024], *save = NULL;
    snprintf(list, sizeof list, "%s", suffixes);
    for (char *s = strtok_r(list, ",", &save); s; s = strtok_r(NULL, ",", &save)) {
        size_t n = strlen(s);
        if (n && length >= n && strcmp(path + length - n, s) == 0) return 1;
    }
    return 0;
}

static int watched(int fd) { return fd >= 0 && fd < MAX_FDS && fds[fd].active; }

// Called with the lock held. Returns 1 when this call of `c` must fail.
static int should_fail(enum call c) {
    if (c != fail_call) return 0;
    calls_seen++;
    if (calls_seen < fail_first) return 0;
    if (fail_count >= 0 && calls_seen >= fail_first + fail_count) return 0;
    char message[96];
    int n = snprintf(message, sizeof message, "iofault: %s failed with %s\n", call_name(c),
                     fail_errno == ENOSPC ? "ENOSPC" : fail_errno == EDQUOT ? "EDQUOT" : "EIO");
    real_write(2, message, (size_t)n);
    return 1;
}

static void remember(int fd, const char *path, int flags) {
    if (fd < 0 || fd >= MAX_FDS || !matches(path)) return;
    pthread_mutex_lock(&lock);
    fds[fd].active = 1;
    fds[fd].synchronous = (flags & (O_DSYNC | O_SYNC)) != 0;
    fds[fd].journal = -1;
    if (power_loss && !fds[fd].synchronous) {
        char journal[PATH_MAX];
        snprintf(journal, sizeof journal, "%s.unsynced", path);
        fds[fd].journal = real_open(journal, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    }
    pthread_mutex_unlock(&lock);
}

// Called with the lock held: saves what a write of `count` bytes at `offset` will overwrite.
static void journal_before_write(int fd, size_t count, off_t offset) {
    if (!power_loss || fds[fd].synchronous || fds[fd].journal < 0) return;
    struct stat status;
    if (fstat(fd, &status) != 0) return;
    uint64_t size = (uint64_t)status.st_size;
    uint64_t start = (uint64_t)offset;
    uint64_t existing = start >= size ? 0 : (size - start < count ? size - start : count);
    size_t total = 24 + (size_t)existing;
    unsigned char *record = malloc(total);
    if (!record) return;
    uint64_t header[3] = { start, existing, size };
    memcpy(record, header, 24);
    if (existing > 0) real_pread64(fd, record + 24, (size_t)existing, offset);
    real_write(fds[fd].journal, record, total);
    free(record);
}

static void journal_flushed(int fd) {
    if (power_loss && fds[fd].journal >= 0) ftruncate(fds[fd].journal, 0);
    // Every descriptor of the same file shares the flush: empty their journals too.
    struct stat mine;
    if (!power_loss || fstat(fd, &mine) != 0) return;
    for (int other = 0; other < MAX_FDS; other++) {
        struct stat theirs;
        if (other != fd && fds[other].active && fds[other].journal >= 0 && fstat(other, &theirs) == 0 &&
            theirs.st_ino == mine.st_ino && theirs.st_dev == mine.st_dev) {
            ftruncate(fds[other].journal, 0);
        }
    }
}

static int mode_argument(int flags, va_list arguments) {
    return (flags & (O_CREAT | O_TMPFILE)) ? va_arg(arguments, int) : 0;
}

int open(const char *path, int flags, ...) {
    init();
    va_list arguments;
    va_start(arguments, flags);
    int mode = mode_argument(flags, arguments);
    va_end(arguments);
    int fd = real_open(path, flags, mode);
    remember(fd, path, flags);
    return fd;
}

int open64(const char *path, int flags, ...) {
    init();
    va_list arguments;
    va_start(arguments, flags);
    int mode = mode_argument(flags, arguments);
    va_end(arguments);
    int fd = real_open64(path, flags, mode);
    remember(fd, path, flags);
    return fd;
}

int openat(int directory, const char *path, int flags, ...) {
    init();
    va_list arguments;
    va_start(arguments, flags);
    int mode = mode_argument(flags, arguments);
    va_end(arguments);
    int fd = real_openat(directory, path, flags, mode);
    remember(fd, path, flags);
    return fd;
}

int openat64(int directory, const char *path, int flags, ...) {
    init();
    va_list arguments;
    va_start(arguments, flags);
    int mode = mode_argument(flags, arguments);
    va_end(arguments);
    int fd = real_openat64(directory, path, flags, mode);
    remember(fd, path, flags);
    return fd;
}

int close(int fd) {
    init();
    if (watched(fd)) {
        pthread_mutex_lock(&lock);
        if (fds[fd].journal >= 0) real_close(fds[fd].journal);
        fds[fd].active = 0;
        fds[fd].journal = -1;
        pthread_mutex_unlock(&lock);
    }
    return real_close(fd);
}

static ssize_t positioned_write(ssize_t (*real)(int, const void *, size_t, off_t), int fd, const void *buffer,
                                size_t count, off_t offset) {
    init();
    if (!watched(fd)) return real(fd, buffer, count, offset);
    pthread_mutex_lock(&lock);
    if (should_fail(CALL_PWRITE)) {
        pthread_mutex_unlock(&lock);
        errno = fail_errno;
        return -1;
    }
    journal_before_write(fd, count, offset);
    ssize_t written = real(fd, buffer, count, offset);
    pthread_mutex_unlock(&lock);
    return written;
}

ssize_t pwrite(int fd, const void *buffer, size_t count, off_t offset) {
    init();
    return positioned_write(real_pwrite, fd, buffer, count, offset);
}

ssize_t pwrite64(int fd, const void *buffer, size_t count, off_t offset) {
    init();
    return positioned_write(real_pwrite64, fd, buffer, count, offset);
}

ssize_t write(int fd, const void *buffer, size_t count) {
    init();
    if (!watched(fd)) return real_write(fd, buffer, count);
    pthread_mutex_lock(&lock);
    if (should_fail(CALL_WRITE)) {
        pthread_mutex_unlock(&lock);
        errno = fail_errno;
        return -1;
    }
    off_t offset = lseek(fd, 0, SEEK_CUR);
    if (offset >= 0) journal_before_write(fd, count, offset);
    ssize_t written = real_write(fd, buffer, count);
    pthread_mutex_unlock(&lock);
    return written;
}

static size_t vector_length(const struct iovec *vector, int count) {
    size_t total = 0;
    for (int i = 0; i < count; i++) total += vector[i].iov_len;
    return total;
}

// LMDB writes runs of adjacent pages with lseek and writev.
ssize_t writev(int fd, const struct iovec *vector, int count) {
    init();
    if (!watched(fd)) return real_writev(fd, vector, count);
    pthread_mutex_lock(&lock);
    if (should_fail(CALL_WRITE)) {
        pthread_mutex_unlock(&lock);
        errno = fail_errno;
        return -1;
    }
    off_t offset = lseek(fd, 0, SEEK_CUR);
    if (offset >= 0) journal_before_write(fd, vector_length(vector, count), offset);
    ssize_t written = real_writev(fd, vector, count);
    pthread_mutex_unlock(&lock);
    return written;
}

ssize_t pwritev(int fd, const struct iovec *vector, int count, off_t offset) {
    init();
    if (!watched(fd)) return real_pwritev(fd, vector, count, offset);
    pthread_mutex_lock(&lock);
    if (should_fail(CALL_PWRITE)) {
        pthread_mutex_unlock(&lock);
        errno = fail_errno;
        return -1;
    }
    journal_before_write(fd, vector_length(vector, count), offset);
    ssize_t written = real_pwritev(fd, vector, count, offset);
    pthread_mutex_unlock(&lock);
    return written;
}

static int flush(int (*real)(int), enum call c, int fd) {
    init();
    if (!watched(fd)) return real(fd);
    pthread_mutex_lock(&lock);
    if (should_fail(c)) {
        pthread_mutex_unlock(&lock);
        errno = fail_errno;
        return -1;
    }
    int result = real(fd);
    if (result == 0) journal_flushed(fd);
    pthread_mutex_unlock(&lock);
    return result;
}

int fdatasync(int fd) { return flush(real_fdatasync, CALL_FDATASYNC, fd); }

int fsync(int fd) { return flush(real_fsync, CALL_FSYNC, fd); }
