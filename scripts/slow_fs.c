/* slow_fs: a passthrough file system (FUSE, libfuse 3) that makes every read wait a fixed
 * time first, as on a disk with read latency, each read on its own: reads made at once wait
 * side by side (libfuse's multi-threaded loop serves each request in a thread of its own),
 * so a process reading with more threads gets more pages a second, which a limit on the
 * disk's IOPS (scripts/slow_disk.py) cannot show, since it caps all threads together.
 *
 * Writes may wait too (WRITE_DELAY_US, 0 by default), except those to the redo log
 * (ib_logfile*): data pages then reach the "disk" at a known pace while the log keeps up,
 * which is the checkpoint-age stall's shape (the page cleaners cannot write the oldest dirty
 * pages as fast as the log fills), on any machine. fsync and metadata pass through.
 *
 * usage: slow_fs BACKING MOUNTPOINT READ_DELAY_US [WRITE_DELAY_US]
 *        (foreground; SIGTERM unmounts)
 *
 * A file a program opens with O_DIRECT (InnoDB's data files, innodb_flush_method=O_DIRECT,
 * the default) bypasses the kernel's page cache, so each of its reads reaches slow_fs and
 * waits: a page InnoDB evicted is read again from the "disk", never from the host's cache.
 * Other files are cached as usual, and may be mapped (the server's tc.log is). Built by
 * scripts/slow-fs-server.sh (Debian's libfuse3-dev, installed by scripts/setup.sh). */
#define FUSE_USE_VERSION 31
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fuse.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

static int root_fd = -1;        /* the backing directory: every path is opened under it */
static struct timespec delay;   /* each read's wait */
static struct timespec write_delay; /* each write's, but the redo log's */

/* A FUSE path is absolute ("/a/b"); under the backing directory it is "a/b" ("." for "/"). */
static const char *rel(const char *path) { return path[1] ? path + 1 : "."; }

static int err(int r) { return r < 0 ? -errno : r; }

static void *sf_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
    /* With asynchronous direct I/O the kernel sends an O_DIRECT read as a background request,
     * and it keeps at most max_background (12 by default) of those in flight: the reads of a
     * dozen threads would queue there, a cap on the disk's concurrency this file system is
     * meant not to have. Sent synchronously, each waits in its own request. */
    conn->want &= ~FUSE_CAP_ASYNC_DIO;
    conn->max_background = 256;
    conn->congestion_threshold = 192;
    cfg->use_ino = 1;
    cfg->entry_timeout = cfg->attr_timeout = cfg->negative_timeout = 0;  /* sizes change under us */
    return NULL;
}

static int sf_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
    if (fi) return err(fstat(fi->fh, st));
    return err(fstatat(root_fd, rel(path), st, AT_SYMLINK_NOFOLLOW));
}

static int sf_access(const char *path, int mask) { return err(faccessat(root_fd, rel(path), mask, 0)); }

static int sf_readlink(const char *path, char *buf, size_t size) {
    ssize_t n = readlinkat(root_fd, rel(path), buf, size - 1);
    if (n < 0) return -errno;
    buf[n] = 0;
    return 0;
}

static int sf_readdir(const char *path, void *buf, fuse_fill_dir_t fill, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
    (void)off; (void)fi; (void)flags;
    int fd = openat(root_fd, rel(path), O_RDONLY | O_DIRECTORY);
    if (fd < 0) return -errno;
    DIR *dir = fdopendir(fd);
    if (!dir) { close(fd); return -errno; }
    struct dirent *e;
    while ((e = readdir(dir))) {
        struct stat st = {.st_ino = e->d_ino, .st_mode = (mode_t)DTTOIF(e->d_type)};
        if (fill(buf, e->d_name, &st, 0, 0)) break;
    }
    closedir(dir);
    return 0;
}

static int sf_mkdir(const char *path, mode_t mode) { return err(mkdirat(root_fd, rel(path), mode)); }
static int sf_unlink(const char *path) { return err(unlinkat(root_fd, rel(path), 0)); }
static int sf_rmdir(const char *path) { return err(unlinkat(root_fd, rel(path), AT_REMOVEDIR)); }
static int sf_symlink(const char *to, const char *path) { return err(symlinkat(to, root_fd, rel(path))); }
static int sf_link(const char *from, const char *to) { return err(linkat(root_fd, rel(from), root_fd, rel(to), 0)); }

static int sf_rename(const char *from, const char *to, unsigned int flags) {
    return err(renameat2(root_fd, rel(from), root_fd, rel(to), flags));
}

static int sf_chmod(const char *path, mode_t mode, struct fuse_file_info *fi) {
    return fi ? err(fchmod(fi->fh, mode)) : err(fchmodat(root_fd, rel(path), mode, 0));
}

static int sf_chown(const char *path, uid_t uid, gid_t gid, struct fuse_file_info *fi) {
    return fi ? err(fchown(fi->fh, uid, gid)) : err(fchownat(root_fd, rel(path), uid, gid, AT_SYMLINK_NOFOLLOW));
}

static int sf_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
    if (fi) return err(ftruncate(fi->fh, size));
    int fd = openat(root_fd, rel(path), O_WRONLY);
    if (fd < 0) return -errno;
    int r = err(ftruncate(fd, size));
    close(fd);
    return r;
}

static int sf_utimens(const char *path, const struct timespec tv[2], struct fuse_file_info *fi) {
    return fi ? err(futimens(fi->fh, tv)) : err(utimensat(root_fd, rel(path), tv, AT_SYMLINK_NOFOLLOW));
}

/* O_DIRECT is the kernel's business (it sends us every such read): the backing file is read
 * through the host's cache, the wait being ours. */
static int open_flags(int flags) { return flags & ~O_DIRECT; }

static int sf_create(const char *path, mode_t mode, struct fuse_file_info *fi) {
    int fd = openat(root_fd, rel(path), open_flags(fi->flags) | O_CREAT, mode);
    if (fd < 0) return -errno;
    fi->fh = fd;
    return 0;
}

static int sf_open(const char *path, struct fuse_file_info *fi) {
    int fd = openat(root_fd, rel(path), open_flags(fi->flags));
    if (fd < 0) return -errno;
    fi->fh = fd;
    return 0;
}

static int sf_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    (void)path;
    nanosleep(&delay, NULL);    /* in this request's own thread: concurrent reads overlap */
    return err(pread(fi->fh, buf, size, off));
}

/* The redo log is InnoDB's ib_logfile0 (ib_logfile101 while it is resized), in the data
 * directory's top. */
static bool is_redo_log(const char *path) { return strncmp(path, "/ib_logfile", 11) == 0; }

static int sf_write(const char *path, const char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
    if ((write_delay.tv_sec || write_delay.tv_nsec) && !(path && is_redo_log(path)))
        nanosleep(&write_delay, NULL);
    return err(pwrite(fi->fh, buf, size, off));
}

static int sf_statfs(const char *path, struct statvfs *st) {
    (void)path;
    return err(fstatvfs(root_fd, st));
}

static int sf_release(const char *path, struct fuse_file_info *fi) {
    (void)path;
    close(fi->fh);
    return 0;
}

static int sf_fsync(const char *path, int datasync, struct fuse_file_info *fi) {
    (void)path;
    return err(datasync ? fdatasync(fi->fh) : fsync(fi->fh));
}

static int sf_fallocate(const char *path, int mode, off_t off, off_t len, struct fuse_file_info *fi) {
    (void)path;
    return err(fallocate(fi->fh, mode, off, len));
}

static off_t sf_lseek(const char *path, off_t off, int whence, struct fuse_file_info *fi) {
    (void)path;
    off_t r = lseek(fi->fh, off, whence);
    return r < 0 ? -errno : r;
}

static const struct fuse_operations ops = {
    .init = sf_init, .getattr = sf_getattr, .access = sf_access, .readlink = sf_readlink,
    .readdir = sf_readdir, .mkdir = sf_mkdir, .unlink = sf_unlink, .rmdir = sf_rmdir,
    .symlink = sf_symlink, .link = sf_link, .rename = sf_rename, .chmod = sf_chmod,
    .chown = sf_chown, .truncate = sf_truncate, .utimens = sf_utimens, .create = sf_create,
    .open = sf_open, .read = sf_read, .write = sf_write, .statfs = sf_statfs,
    .release = sf_release, .fsync = sf_fsync, .fallocate = sf_fallocate, .lseek = sf_lseek,
};

/* "N" microseconds into *ts; false if it is not a number of them. */
static bool parse_delay(const char *arg, struct timespec *ts) {
    char *end;
    long us = strtol(arg, &end, 10);
    if (*end || end == arg || us < 0) return false;
    ts->tv_sec = us / 1000000;
    ts->tv_nsec = (us % 1000000) * 1000;
    return true;
}

int main(int argc, char **argv) {
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s BACKING MOUNTPOINT READ_DELAY_US [WRITE_DELAY_US]\n", argv[0]);
        return 2;
    }
    for (int i = 3; i < argc; i++) {
        if (!parse_delay(argv[i], i == 3 ? &delay : &write_delay)) {
            fprintf(stderr, "slow_fs: a delay wants microseconds, not '%s'\n", argv[i]);
            return 2;
        }
    }
    root_fd = open(argv[1], O_RDONLY | O_DIRECTORY);
    if (root_fd < 0) { perror(argv[1]); return 1; }
    /* -f: foreground, so that whoever started us stops us by pid; max_threads: enough that
     * every reading thread of the server waits in a request thread of its own; allow_other:
     * the server may run as another user than the one mounting. */
    char *fargv[] = {argv[0], argv[2], "-f", "-o", "max_threads=64,allow_other,fsname=slow_fs", NULL};
    return fuse_main(5, fargv, &ops, NULL);
}
