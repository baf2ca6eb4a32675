/*
 * sluice (the front): the `sluice` program as installed by `make install`, in front of the
 * Python CLI (docs/slurm-commands.md, "How fast a command starts"; issue 17, item 1).
 *
 * A Python CLI spends ~25 ms of CPU starting its interpreter and importing its modules before
 * it does anything, so a script that loops over `sbatch` crawls. For the commands scripts call
 * in loops (submit, cancel, hold, release, update, queue, nodes, show, history, scontrol: sbatch,
 * scancel, squeue, sinfo, sacct, scontrol) this program hands the call to a warm per-user
 * Python process, the command server (cli/command_server.py), which forks a child that runs
 * `sluice ARGS` exactly as the Python CLI would: with this process's arguments, environment,
 * working directory, umask and standard input, output and error (passed as descriptors). Every
 * other command, and every case where no server can be used, execs the Python CLI itself
 * (`python -P -m cli.main ARGS`, the interpreter next to this program), so the front never
 * changes what a command does, only how fast a hot one starts. Mercurial's chg is the model.
 *
 * One server per interpreter, PYTHON* variables, locale (LC_ALL, LC_CTYPE, LANG), groups,
 * namespaces and cgroups: the socket's name hashes them.
 *
 * Trust: the server runs as the calling user and grants nothing; its socket lives in a
 * directory that must be the user's own and mode 0700 ($XDG_RUNTIME_DIR/sluice, else
 * ${TMPDIR:-/tmp}/sluice-UID); anything else (another owner, a symlink, wider modes) and the front uses
 * no server. The lock file is made through a descriptor on that directory, and the server
 * checks the directory again on its own descriptor before it makes anything there. Each end checks the other's uid on the connection itself (SO_PEERCRED), so no
 * race on the path can hand a call to another user's listener. With descriptor 0, 1 or 2
 * closed the front uses no server (the socket would take the closed number).
 *
 * Protocol, on a SOCK_STREAM Unix socket, host byte order:
 *   front -> child: u32 length, then `length` bytes of NUL-terminated strings:
 *                   cwd, umask (octal), argc, argv[1..argc], then NAME=VALUE... to the end.
 *   child -> front: 'P' + i32 pid (ready), or 'R' + 0 (refused: run the Python CLI instead);
 *                   no 'P' within 5 s and the front runs the Python CLI.
 *   front -> child: 'G' (go), with descriptors 0, 1 and 2 attached (SCM_RIGHTS): a call
 *                   queued to a server that never answers holds none of the caller's files.
 *                   Before it, nothing of the command has run, so the front may still fall
 *                   back; after it, it never does (a submission is never sent twice).
 *   child -> front: 'R' + 0 when no go came within 10 s of the ready (a front stopped in
 *                   between): nothing ran, the front runs the Python CLI; else
 *                   'X' + i32 exit status, when the command has ended.
 * The front forwards SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1 and SIGUSR2 to the child, but
 * none it was started ignoring (nohup); one caught before the go ends the front, and the
 * command never runs. Ctrl-Z (SIGTSTP) stops the child (SIGSTOP) and the front; SIGCONT (`fg`)
 * continues both.
 * SLUICE_COMMAND_SERVER=off: never use a server; nor is one used inside a job (SLUICE_JOB_SLUID
 * or SLURM_JOB_ID set), where it would live on in the job's cgroup.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static const char *const HOT[] = {"submit", "cancel", "hold",    "release",  "update",
                                  "queue",  "nodes",  "show",    "history",  "scontrol", NULL};
static char python[PATH_MAX];
static volatile sig_atomic_t child_pid;
static volatile sig_atomic_t forwarded;

/* The Python CLI itself: what every call does when no server is used. */
static void run_python(int argc, char **argv) {
    char **args = calloc((size_t)argc + 5, sizeof *args);
    if (args == NULL) {
        perror("sluice");
        exit(1);
    }
    args[0] = python;
    args[1] = "-P";  /* the working directory is not put on sys.path */
    args[2] = "-m";
    args[3] = "cli.main";
    for (int i = 1; i < argc; i++)
        args[i + 3] = argv[i];
    execv(python, args);
    fprintf(stderr, "sluice: cannot run %s: %s\n", python, strerror(errno));
    exit(1);
}

/* The interpreter next to this program (a virtualenv's bin/python), as its path there. */
static int find_python(void) {
    ssize_t n = readlink("/proc/self/exe", python, sizeof python - 1);
    if (n <= 0)
        return -1;
    python[n] = '\0';
    char *slash = strrchr(python, '/');
    if (slash == NULL || (size_t)(slash - python) + sizeof "/python" > sizeof python)
        return -1;
    strcpy(slash, "/python");
    return access(python, X_OK);
}

static int is_hot(const char *command) {
    for (int i = 0; HOT[i] != NULL; i++)
        if (strcmp(command, HOT[i]) == 0)
            return 1;
    return 0;
}

/* The socket's directory, open (-1 when unusable): `dir` exists (made if missing), is a
 * directory (not a symlink) owned by us, mode 0700. The lock file is made relative to this
 * descriptor, never by path: with a TMPDIR whose parent another user owns (root after `su`
 * keeps the user's), they could swap the directory for a symlink after this check. */
static int dir_fd = -1;

static int private_dir(const char *dir) {
    struct stat st;
    if (mkdir(dir, 0700) != 0 && errno != EEXIST)
        return -1;
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (fstat(fd, &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid()
        || (st.st_mode & 077) != 0) {
        close(fd);
        return -1;
    }
    dir_fd = fd;
    return 0;
}

/* FNV-1a over the settings that decide which code a server runs. */
static uint64_t fnv(uint64_t h, const char *text) {
    for (const unsigned char *p = (const unsigned char *)(text ? text : "\x01"); *p; p++)
        h = (h ^ *p) * 1099511628211ULL;
    return (h ^ 0xff) * 1099511628211ULL;
}

static int by_text(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int decides_the_server(const char *entry) {
    return strncmp(entry, "PYTHON", 6) == 0 || strncmp(entry, "LC_ALL=", 7) == 0
           || strncmp(entry, "LC_CTYPE=", 9) == 0 || strncmp(entry, "LANG=", 5) == 0;
}

static int socket_path(char *out, size_t size) {
    char dir[PATH_MAX];
    const char *runtime = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    if (runtime != NULL && runtime[0] == '/' && lstat(runtime, &st) == 0 && S_ISDIR(st.st_mode)
        && st.st_uid == getuid() && (st.st_mode & 077) == 0)
        snprintf(dir, sizeof dir, "%s/sluice", runtime);
    else {
        const char *tmp = getenv("TMPDIR");
        snprintf(dir, sizeof dir, "%s/sluice-%u", tmp != NULL && tmp[0] == '/' ? tmp : "/tmp",
                 (unsigned)getuid());
    }
    if (private_dir(dir) != 0)
        return -1;
    uint64_t h = fnv(14695981039346656037ULL, python);
    /* PYTHONPATH, PYTHONHOME...: which code runs; PYTHONIOENCODING and the locale: the
     * encoding of its standard streams. In name order: a shell passes on its variables in an
     * order of its own, which must not make another server. */
    size_t named = 0;
    for (char **e = environ; *e != NULL; e++)
        named += decides_the_server(*e);
    char **python_vars = calloc(named + 1, sizeof *python_vars);
    if (python_vars == NULL)
        return -1;
    named = 0;
    for (char **e = environ; *e != NULL; e++)
        if (decides_the_server(*e))
            python_vars[named++] = *e;
    qsort(python_vars, named, sizeof *python_vars, by_text);
    for (size_t i = 0; i < named; i++)
        h = fnv(h, python_vars[i]);
    free(python_vars);
    /* The groups a call runs with (sg, newgrp): a credential carries the caller's gid. */
    int count = getgroups(0, NULL);
    gid_t *groups = count > 0 ? calloc((size_t)count, sizeof *groups) : NULL;
    count = groups != NULL ? getgroups(count, groups) : 0;
    char number[24];
    snprintf(number, sizeof number, "%u", (unsigned)getgid());
    h = fnv(h, number);
    for (int i = 0; i < count; i++) {
        snprintf(number, sizeof number, "%u", (unsigned)groups[i]);
        h = fnv(h, number);
    }
    free(groups);
    /* The namespaces a call runs in (a sandbox, a container sharing this directory): a call
     * made in others is served by a server of its own world, never run outside it. */
    static const char *const NAMESPACES[] = {"mnt", "net", "pid", "user", "ipc", "uts",
                                             "cgroup", NULL};
    for (int i = 0; NAMESPACES[i] != NULL; i++) {
        char link[64], target[128];
        snprintf(link, sizeof link, "/proc/self/ns/%s", NAMESPACES[i]);
        ssize_t got = readlink(link, target, sizeof target - 1);
        target[got > 0 ? got : 0] = '\0';
        h = fnv(h, target);
    }
    /* The cgroups a call runs in (a systemd scope, a cgroup's memory or pids limit): a call
     * from another is served by a server started there, whose children are born in it. */
    char cgroups[4096];
    int fd = open("/proc/self/cgroup", O_RDONLY | O_CLOEXEC);
    ssize_t got = fd >= 0 ? read(fd, cgroups, sizeof cgroups - 1) : -1;
    if (fd >= 0)
        close(fd);
    if (got <= 0 || (size_t)got == sizeof cgroups - 1)
        return -1;  /* unreadable, or longer than we read: no server */
    cgroups[got] = '\0';
    h = fnv(h, cgroups);
    int n = snprintf(out, size, "%s/cmd-%016llx", dir, (unsigned long long)h);
    return n > 0 && (size_t)n < sizeof((struct sockaddr_un *)0)->sun_path ? 0 : -1;
}

/* Close every descriptor from `first` up. */
static void close_from(int first) {
#ifdef SYS_close_range
    if (syscall(SYS_close_range, (unsigned)first, ~0U, 0) == 0)
        return;
#endif
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = first; fd < (max > 0 && max < 65536 ? max : 65536); fd++)
        close((int)fd);
}

/* Start a server for the next calls, detached; this call does not wait for it. Not again
 * within SPAWN_GAP_S of the last start (the lock file's time): a server that cannot start
 * (a tree without cli/command_server.py) must not cost every call a doomed interpreter. */
#define SPAWN_GAP_S 10
static void spawn_server(const char *path) {
    char lock[PATH_MAX];
    struct stat st;
    const char *name = strrchr(path, '/');
    if (dir_fd < 0 || name == NULL)
        return;
    snprintf(lock, sizeof lock, "%s.lock", name + 1);
    if (fstatat(dir_fd, lock, &st, AT_SYMLINK_NOFOLLOW) == 0
        && st.st_mtime + SPAWN_GAP_S > time(NULL) && st.st_mtime <= time(NULL))
        return;
    int fd = openat(dir_fd, lock, O_WRONLY | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return;
    futimens(fd, NULL);
    close(fd);
    pid_t pid = fork();
    if (pid != 0) {
        if (pid > 0)
            waitpid(pid, NULL, 0);
        return;
    }
    if (fork() != 0)
        _exit(0);  /* the grandchild is re-parented: no zombie, no wait */
    setsid();
    close_from(3);  /* the caller's other descriptors (a CI runner's pipe) are not the server's */
    int null = open("/dev/null", O_RDWR);
    if (null >= 0) {
        dup2(null, 0);
        dup2(null, 1);
        dup2(null, 2);
        if (null > 2)
            close(null);
    }
    if (chdir("/") != 0)
        _exit(1);
    /* The server keeps only what decides its code and locale: each call brings its own
     * environment, and the caller's other variables (tokens among them) stay out of it. */
    static const char *const KEEP[] = {"PATH=", "HOME=", "USER=", "LOGNAME=", "LANG=", "LC_",
                                       "PYTHON", "TMPDIR=", NULL};
    char *env[64];
    size_t n = 0;
    for (char **e = environ; *e != NULL && n < sizeof env / sizeof env[0] - 1; e++)
        for (int i = 0; KEEP[i] != NULL; i++)
            if (strncmp(*e, KEEP[i], strlen(KEEP[i])) == 0) {
                env[n++] = *e;
                break;
            }
    env[n] = NULL;
    char *args[] = {python, "-P", "-m", "cli.command_server", (char *)path, NULL};
    execve(python, args, env);
    _exit(1);
}

/* A server of ours at `path`: the listener's uid is checked on the connection itself
 * (SO_PEERCRED), after any check of the directory, so no race on the path (a directory
 * swapped under a TMPDIR others can write, a socket another user bound under our name) can
 * hand this call's arguments, environment and descriptors to another user. */
static int connect_to(const char *path) {
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_un addr = {.sun_family = AF_UNIX};
    size_t n = strlen(path);
    struct ucred peer;
    socklen_t size = sizeof peer;
    if (n >= sizeof addr.sun_path) {
        close(fd);
        return -1;
    }
    memcpy(addr.sun_path, path, n + 1);
    if (connect(fd, (struct sockaddr *)&addr, sizeof addr) != 0
        || getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &peer, &size) != 0 || size != sizeof peer
        || peer.uid != getuid()) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Descriptors 0, 1 and 2 are open. A closed one would be the next one opened, the socket to
 * the server, and the child would get the protocol's socket as its stdin, stdout or stderr. */
static int standard_fds_open(void) {
    for (int fd = 0; fd <= 2; fd++)
        if (fcntl(fd, F_GETFD) < 0)
            return 0;
    return 1;
}

static int write_all(int fd, const char *data, size_t size) {
    while (size > 0) {
        ssize_t n = write(fd, data, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        size -= (size_t)n;
    }
    return 0;
}

static int read_all(int fd, char *data, size_t size) {
    while (size > 0) {
        ssize_t n = read(fd, data, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        data += n;
        size -= (size_t)n;
    }
    return 0;
}

/* A growing buffer of NUL-terminated strings. */
struct words {
    char *data;
    size_t size, cap;
};

static int add(struct words *w, const char *text) {
    size_t n = strlen(text) + 1;
    if (w->size + n > w->cap) {
        size_t cap = (w->cap ? w->cap * 2 : 8192) + n;
        char *data = realloc(w->data, cap);
        if (data == NULL)
            return -1;
        w->data = data;
        w->cap = cap;
    }
    memcpy(w->data + w->size, text, n);
    w->size += n;
    return 0;
}

/* Send the call: its length, then its words. */
static int send_call(int fd, int argc, char **argv) {
    struct words w = {0};
    char cwd[PATH_MAX], number[32];
    if (getcwd(cwd, sizeof cwd) == NULL)
        return -1;  /* no working directory we can name: the Python CLI copes as it can */
    mode_t mask = umask(0);
    umask(mask);
    int ok = add(&w, cwd) == 0;
    snprintf(number, sizeof number, "%o", (unsigned)mask);
    ok = ok && add(&w, number) == 0;
    snprintf(number, sizeof number, "%d", argc - 1);
    ok = ok && add(&w, number) == 0;
    for (int i = 1; ok && i < argc; i++)
        ok = add(&w, argv[i]) == 0;
    for (char **e = environ; ok && *e != NULL; e++)
        ok = add(&w, *e) == 0;
    if (!ok || w.size > UINT32_MAX) {
        free(w.data);
        return -1;
    }
    uint32_t length = (uint32_t)w.size;
    int result = write_all(fd, (const char *)&length, sizeof length) == 0
                 ? write_all(fd, w.data, w.size) : -1;
    free(w.data);
    return result;
}

/* The go, with descriptors 0-2 attached (SCM_RIGHTS): sent only once the child is ready, so a
 * call queued to a server that never takes it holds none of our files open. */
static int send_go(int fd) {
    int fds[3] = {0, 1, 2};
    char control[CMSG_SPACE(sizeof fds)];
    memset(control, 0, sizeof control);
    char go = 'G';
    struct iovec iov = {.iov_base = &go, .iov_len = 1};
    struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = control,
                         .msg_controllen = sizeof control};
    struct cmsghdr *cmsg = CMSG_FIRSTHDR(&msg);
    cmsg->cmsg_level = SOL_SOCKET;
    cmsg->cmsg_type = SCM_RIGHTS;
    cmsg->cmsg_len = CMSG_LEN(sizeof fds);
    memcpy(CMSG_DATA(cmsg), fds, sizeof fds);
    ssize_t sent;
    do
        sent = sendmsg(fd, &msg, MSG_NOSIGNAL);
    while (sent < 0 && errno == EINTR);
    return sent == 1 ? 0 : -1;
}

static int read_reply(int fd, char *kind, int32_t *value) {
    char reply[1 + sizeof(int32_t)];
    if (read_all(fd, reply, sizeof reply) != 0)
        return -1;
    *kind = reply[0];
    memcpy(value, reply + 1, sizeof *value);
    return 0;
}

/* The child's ready, if it comes within READY_MS: a server that cannot answer (stopped,
 * frozen, starved) costs a call that long, then the Python CLI runs it (nothing ran yet). */
#define READY_MS 5000
static int read_ready(int fd, char *kind, int32_t *value) {
    struct pollfd waiting = {.fd = fd, .events = POLLIN};
    int n;
    do
        n = poll(&waiting, 1, READY_MS);
    while (n < 0 && errno == EINTR);
    if (n <= 0)
        return -1;
    char reply[1 + sizeof(int32_t)];
    if (read_all(fd, reply, sizeof reply) != 0)
        return -1;
    *kind = reply[0];
    memcpy(value, reply + 1, sizeof *value);
    return 0;
}

static void forward(int sig) {
    forwarded = sig;
    if (child_pid > 0)
        kill((pid_t)child_pid, sig);
}

/* Ctrl-Z: the served call stops with the front, as the Python CLI's process would stop. The
 * child lives in the server's session, where the terminal's SIGTSTP means nothing (an orphaned
 * process group drops it): it gets SIGSTOP. Then the front stops itself (the signal again, at
 * its default action, unblocked only here); `fg` or `bg` continues it, and `resume` the child. */
static void stop(int sig) {
    int saved = errno;
    struct sigaction dfl = {.sa_handler = SIG_DFL}, own;
    sigset_t only;
    sigemptyset(&dfl.sa_mask);
    sigemptyset(&only);
    sigaddset(&only, sig);
    if (child_pid > 0)
        kill((pid_t)child_pid, SIGSTOP);
    sigaction(sig, &dfl, &own);
    raise(sig);
    sigprocmask(SIG_UNBLOCK, &only, NULL);  /* stopped here until SIGCONT */
    sigprocmask(SIG_BLOCK, &only, NULL);
    sigaction(sig, &own, NULL);
    errno = saved;
}

static void resume(int sig) {
    (void)sig;
    if (child_pid > 0)
        kill((pid_t)child_pid, SIGCONT);
}

int main(int argc, char **argv) {
    errno = 0;
    if (find_python() != 0) {
        if (errno == ENOENT || errno == 0 || python[0] == '\0')
            fprintf(stderr, "sluice: no Python interpreter next to this program (%s)\n", python);
        else  /* e.g. a virtualenv whose interpreter links into a home other users cannot enter */
            fprintf(stderr, "sluice: cannot run the Python interpreter next to this program "
                    "(%s): %s; it and what it links to must be open to every user of sluice\n",
                    python, strerror(errno));
        return 1;
    }
    const char *setting = getenv("SLUICE_COMMAND_SERVER");
    char path[sizeof((struct sockaddr_un *)0)->sun_path];
    /* Inside a job a server would live in the job's cgroup and serve the user's other
     * sessions from there: jobs run the Python CLI. */
    if (argc < 2 || !is_hot(argv[1]) || (setting != NULL && strcmp(setting, "off") == 0)
        || getenv("SLUICE_JOB_SLUID") != NULL || getenv("SLURM_JOB_ID") != NULL
        || !standard_fds_open() || socket_path(path, sizeof path) != 0)
        run_python(argc, argv);
    signal(SIGPIPE, SIG_IGN);
    int fd = connect_to(path);
    if (fd < 0) {
        spawn_server(path);
        run_python(argc, argv);
    }
    char kind = 0;
    int32_t value = 0;
    if (send_call(fd, argc, argv) != 0 || read_ready(fd, &kind, &value) != 0 || kind != 'P') {
        close(fd);  /* nothing of the command ran: the server left, refused or is stale */
        if (kind == 'R')
            spawn_server(path);
        run_python(argc, argv);
    }
    child_pid = value;
    const int signals[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGTSTP, SIGCONT};
    for (size_t i = 0; i < sizeof signals / sizeof signals[0]; i++) {
        struct sigaction old, act = {.sa_handler = signals[i] == SIGTSTP   ? stop
                                                   : signals[i] == SIGCONT ? resume
                                                                           : forward};
        sigemptyset(&act.sa_mask);
        act.sa_flags = signals[i] == SIGCONT ? SA_RESTART : 0;
        /* one the caller ignores (nohup's SIGHUP, a background job's SIGINT, a shell without
         * job control's SIGTSTP) stays ignored, as the Python CLI inherits it: not passed on */
        if (sigaction(signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
            continue;
        sigaction(signals[i], &act, NULL);
    }
    if (forwarded || send_go(fd) != 0) {
        close(fd);  /* the child never read its go: it ran nothing */
        if (forwarded) {  /* interrupted before the go: the command is not to run at all */
            signal(forwarded, SIG_DFL);
            raise(forwarded);
            return 128 + forwarded;
        }
        run_python(argc, argv);
    }
    if (read_reply(fd, &kind, &value) == 0 && kind == 'X')
        return value & 0xff;
    if (kind == 'R' && !forwarded) {  /* the child gave up waiting for the go: nothing ran */
        close(fd);
        run_python(argc, argv);
    }
    if (forwarded) {  /* the child died of a signal we passed on: so do we */
        signal(forwarded, SIG_DFL);
        raise(forwarded);
    }
    fprintf(stderr, "sluice %s: the command server's process ended without an exit status\n",
            argv[1]);
    return 1;
}
