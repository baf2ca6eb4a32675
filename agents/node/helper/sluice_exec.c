/*
 * sluice-exec: the last step before a run's command (docs/node-daemon.md, "The exec helper").
 *
 * A run's supervisor (agents/node/supervise.py) spawns this program with posix_spawn (vfork:
 * no copy of the supervisor's page tables) instead of forking itself and running Python in
 * the child. It does what supervise._child does, in the same order, then execs the command:
 *
 *   setsid; default signal dispositions, empty mask; join the run's cgroup; stdin (a pseudo-
 *   terminal becomes the controlling terminal); switch to the owner (setgroups, setresgid,
 *   setresuid, then checked); PR_SET_PDEATHSIG after the switch (which clears it), and the
 *   supervisor must still be the parent; chdir and open the output files as the owner
 *   (O_NOFOLLOW, no directory ever created); exec with PATH searched in the job's env.
 *
 * It runs as the daemon's user (root) with words the job's owner chose, so: it is started
 * with an EMPTY environment (the job's environment comes on a descriptor, a memfd: not in
 * argv, which every user of the host can read in /proc/PID/cmdline); it sets no locale and
 * formats nothing; it parses numbers strictly. Built with -DSLUICE_NOLIBC (x86_64), it links
 * no C library at all: raw system calls, so no dynamic loader, no start-up code and no
 * environment-driven tunables run as root (and none of glibc's CPU probing, which traps to
 * the hypervisor on a VM and costs 0.7 ms a start). Built without, it uses glibc's syscall().
 * It trusts its argv to come from the supervisor: it is not setuid, so anyone else who runs
 * it gets only their own rights.
 *
 * argv: PARENT_PID REPORT_FD STDIN_FD|- TTY(0|1) CGROUP_DIR|"" UID|"" GID NGROUPS GROUP...
 *       CWD STDOUT|"" STDERR|"" ENV_FD NENV -- COMMAND ARG...
 * ENV_FD holds the NENV entries of the job's environment, each NAME=VALUE and a NUL.
 *
 * On a failure it writes "step\0errno\0file\0" on REPORT_FD (close-on-exec: the supervisor
 * reads EOF once the command's exec succeeded; it adds the errno's text) and exits 126.
 */
#define _GNU_SOURCE
#include <asm/ioctls.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/limits.h>
#include <linux/prctl.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/types.h>

#define REPORT_MAX 4000
#define MAX_GROUPS 65536
#define MAX_ENV (1UL << 22) /* entries: more than execve takes (6 MiB of strings at most) */
#ifndef SEEK_END
#define SEEK_END 2
#endif
#define KERNEL_NSIG 64

int helper(int argc, char **argv);

/* -- system calls: raw (SLUICE_NOLIBC) or through glibc's syscall() ----------------------- */

#ifdef SLUICE_NOLIBC
#ifndef __x86_64__
#error "the libc-free build is written for x86_64: build without -DSLUICE_NOLIBC"
#endif
/* A system call; -errno on failure, as the kernel returns it. */
static long sc(long n, long a, long b, long c, long d) {
    long ret;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(n), "D"(a), "S"(b), "d"(c), "r"(r10)
                     : "rcx", "r11", "memory");
    return ret;
}

static void __attribute__((noreturn)) sc_exit(int code) {
    for (;;)
        sc(SYS_exit_group, code, 0, 0, 0);
}

/* mmap: the address, or -errno. */
static long sc_mmap(size_t size, long prot, long flags, long fd) {
    long ret;
    register long r10 __asm__("r10") = flags;
    register long r8 __asm__("r8") = fd;
    register long r9 __asm__("r9") = 0;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(SYS_mmap), "D"(0), "S"(size), "d"(prot),
                     "r"(r10), "r"(r8), "r"(r9) : "rcx", "r11", "memory");
    return ret;
}

/* What the compiler may call for a copy or a zeroed struct. */
void *memcpy(void *to, const void *from, size_t n) {
    char *t = to;
    const char *f = from;
    while (n--)
        *t++ = *f++;
    return to;
}

void *memset(void *to, int c, size_t n) {
    char *t = to;
    while (n--)
        *t++ = (char)c;
    return to;
}

/* The process's entry: argc and argv are on the stack; no C library to start. */
__attribute__((used)) static void start(long *stack) {
    sc_exit(helper((int)stack[0], (char **)(stack + 1)));
}
__asm__(".text\n.global _start\n_start:\n\txor %rbp, %rbp\n\tmov %rsp, %rdi\n"
        "\tand $-16, %rsp\n\tcall start\n\thlt\n");
#else
#include <unistd.h>

static long sc(long n, long a, long b, long c, long d) {
    long ret = syscall(n, a, b, c, d);
    return ret < 0 ? -errno : ret;
}

static void __attribute__((noreturn)) sc_exit(int code) {
    _exit(code);
}

static long sc_mmap(size_t size, long prot, long flags, long fd) {
    void *at = mmap(NULL, size, (int)prot, (int)flags, (int)fd, 0);
    return at == MAP_FAILED ? -errno : (long)at;
}

int main(int argc, char **argv) {
    return helper(argc, argv);
}
#endif

/* -- small string helpers (no C library) ------------------------------------------------- */

static size_t length(const char *text) {
    size_t n = 0;
    while (text[n])
        n++;
    return n;
}

static int same(const char *a, const char *b) {
    while (*a && *a == *b)
        a++, b++;
    return *a == *b;
}

static void copy(char *to, const char *from, size_t n) {
    while (n--)
        *to++ = *from++;
}

/* -- the report ------------------------------------------------------------------------- */

static int report_fd = -1;
static const char *step = "setup";
static const char *step_file = "";

/* Append text and a NUL to buf (at *used, at most REPORT_MAX bytes in all). */
static void append(char *buf, size_t *used, const char *text) {
    size_t n = length(text);
    if (n > REPORT_MAX - 1 - *used)
        n = REPORT_MAX - 1 - *used;
    copy(buf + *used, text, n);
    *used += n;
    buf[(*used)++] = '\0';
}

/* Say why on the report descriptor and end: "step\0errno\0file\0", exit code 126. */
static void __attribute__((noreturn)) fail(long number) {
    char buf[REPORT_MAX], digits[24], *d = digits + sizeof digits;
    size_t used = 0;
    unsigned long value = number > 0 ? (unsigned long)number : 0;
    *--d = '\0';
    do
        *--d = (char)('0' + value % 10);
    while ((value /= 10) != 0);
    append(buf, &used, step);
    append(buf, &used, d);
    append(buf, &used, step_file);
    if (report_fd >= 0)
        sc(SYS_write, report_fd, (long)buf, (long)used, 0);
    sc_exit(126);
}

/* A call that must succeed: its result, or the report of its errno. */
static long must(long ret) {
    if (ret < 0 && ret > -4096)
        fail(-ret);
    return ret;
}

/* A decimal number in [0, max], digits only (else the report: invalid argument). */
static unsigned long number(const char *text, unsigned long max) {
    unsigned long value = 0;
    if (!*text)
        fail(EINVAL);
    for (; *text; text++) {
        unsigned long digit = (unsigned long)(*text - '0');
        if (*text < '0' || *text > '9' || value > (max - digit) / 10)
            fail(EINVAL);
        value = value * 10 + digit;
    }
    return value;
}

/* The job's environment: NENV entries NAME=VALUE, each ended by a NUL, on descriptor fd (a
 * memfd the supervisor wrote), closed once read; an entry more or less is EINVAL. */
static char **read_env(long fd, unsigned long nenv) {
    long size = must(sc(SYS_lseek, fd, 0, SEEK_END, 0));
    char **envp = (char **)must(sc_mmap((nenv + 1) * sizeof(char *), PROT_READ | PROT_WRITE,
                                        MAP_PRIVATE | MAP_ANONYMOUS, -1));
    const char *data = size > 0 ? (const char *)must(sc_mmap((size_t)size, PROT_READ,
                                                             MAP_PRIVATE, fd)) : "";
    sc(SYS_close, fd, 0, 0, 0);
    unsigned long n = 0;
    for (long at = 0; at < size; at++) {
        if (n == nenv)
            fail(EINVAL);
        envp[n++] = (char *)data + at;
        while (at < size && data[at])
            at++;
        if (at == size)
            fail(EINVAL); /* the last entry without its NUL */
    }
    if (n != nenv)
        fail(EINVAL);
    envp[n] = NULL;
    return envp;
}

/* dup2 that also works when from == to: the descriptor then only loses close-on-exec. */
static void move_fd(long from, long to) {
    if (from == to)
        must(sc(SYS_fcntl, to, F_SETFD, 0, 0));
    else
        must(sc(SYS_dup3, from, to, 0, 0));
}

/* Open path for appending, as the current (switched) user, onto descriptor target, emptied
 * first when truncate (slurmstepd's O_TRUNC unless sbatch --open-mode=append).
 * Non-blocking: a FIFO with no reader fails (ENXIO) instead of holding the start (and the
 * supervisor, deaf to its lifeline meanwhile); the command gets the file blocking. */
static void open_output(const char *path, long target, int truncate) {
    long fd = must(sc(SYS_openat, AT_FDCWD, (long)path,
                      O_WRONLY | O_CREAT | O_APPEND | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC
                      | O_NONBLOCK | (truncate ? O_TRUNC : 0), 0666));
    long flags = must(sc(SYS_fcntl, fd, F_GETFL, 0, 0));
    must(sc(SYS_fcntl, fd, F_SETFL, flags & ~(long)O_NONBLOCK, 0));
    move_fd(fd, target);
    if (fd != target)
        sc(SYS_close, fd, 0, 0, 0);
}

/* execvpe as Python's os.execvpe does it: PATH from the job's env (else /bin:/usr/bin), a
 * name with a slash exec'd as it is; the first error other than ENOENT/ENOTDIR wins. */
static void __attribute__((noreturn)) exec_search(char *file, char **argv, char **envp) {
    const char *path = "/bin:/usr/bin";
    char full[PATH_MAX];
    long saved = 0, last = ENOENT;
    for (const char *c = file; *c; c++)
        if (*c == '/')
            fail(-sc(SYS_execve, (long)file, (long)argv, (long)envp, 0));
    for (char **e = envp; *e; e++) {
        const char *v = *e;
        if (v[0] == 'P' && v[1] == 'A' && v[2] == 'T' && v[3] == 'H' && v[4] == '=') {
            path = v + 5;
            break;
        }
    }
    size_t flen = length(file);
    for (const char *dir = path;;) {
        const char *end = dir;
        while (*end && *end != ':')
            end++;
        size_t dlen = (size_t)(end - dir);
        size_t slash = dlen > 0 && dir[dlen - 1] != '/';
        if (dlen + slash + flen + 1 > sizeof full) {
            last = ENAMETOOLONG;
        } else {
            copy(full, dir, dlen);
            full[dlen] = '/';
            copy(full + dlen + slash, file, flen + 1);
            last = -sc(SYS_execve, (long)full, (long)argv, (long)envp, 0);
        }
        if (last != ENOENT && last != ENOTDIR && !saved)
            saved = last;
        if (!*end)
            break;
        dir = end + 1;
    }
    fail(saved ? saved : last);
}

/* The kernel's struct sigaction on x86_64 and the generic ABI (handler, flags, restorer, mask). */
struct kernel_sigaction {
    void *handler;
    unsigned long flags;
    void *restorer;
    unsigned long mask;
};

/* Join the run's cgroup: best effort, as the Python child (the run is tracked without it). */
static void join_cgroup(const char *cgroup) {
    static const char tail[] = "/cgroup.procs";
    char procs[PATH_MAX];
    size_t clen = length(cgroup);
    if (clen + sizeof tail > sizeof procs)
        return;
    copy(procs, cgroup, clen);
    copy(procs + clen, tail, sizeof tail);
    long fd = sc(SYS_openat, AT_FDCWD, (long)procs, O_WRONLY | O_CLOEXEC, 0);
    if (fd >= 0) {
        sc(SYS_write, fd, (long)"0", 1, 0);
        sc(SYS_close, fd, 0, 0, 0);
    }
}

/* Become the owner: groups, then gid, then uid, each real, effective and saved; checked. */
static void switch_user(const char *uid_arg, const char *gid_arg, unsigned long ngroups,
                        char **group_args) {
    static char switch_step[64];
    static unsigned int groups[MAX_GROUPS]; /* gid_t */
    unsigned int ids[3], gids[3];
    size_t ulen = length(uid_arg), glen = length(gid_arg);
    if (ulen > 10 || glen > 10)
        fail(EINVAL);
    /* "switching to uid U gid G": the step's name, as the Python child says it */
    copy(switch_step, "switching to uid ", 17);
    copy(switch_step + 17, uid_arg, ulen);
    copy(switch_step + 17 + ulen, " gid ", 5);
    copy(switch_step + 22 + ulen, gid_arg, glen + 1);
    step = switch_step;
    long uid = (long)number(uid_arg, 0xfffffffeUL), gid = (long)number(gid_arg, 0xfffffffeUL);
    for (unsigned long g = 0; g < ngroups; g++)
        groups[g] = (unsigned int)number(group_args[g], 0xfffffffeUL);
    must(sc(SYS_setgroups, (long)ngroups, (long)groups, 0, 0));
    must(sc(SYS_setresgid, gid, gid, gid, 0));
    must(sc(SYS_setresuid, uid, uid, uid, 0));
    must(sc(SYS_getresuid, (long)&ids[0], (long)&ids[1], (long)&ids[2], 0));
    must(sc(SYS_getresgid, (long)&gids[0], (long)&gids[1], (long)&gids[2], 0));
    for (int i = 0; i < 3; i++)
        if (ids[i] != (unsigned int)uid || gids[i] != (unsigned int)gid)
            fail(EPERM); /* never go on with other ids than the owner's */
}

int helper(int argc, char **argv) {
    int i = 1;
    if (argc < 16)
        return 126; /* not the supervisor's call: no report descriptor to trust */
    long parent = (long)number(argv[i++], 0x7fffffff);
    report_fd = (int)number(argv[i++], 0x7fffffff);
    if (sc(SYS_fcntl, report_fd, F_SETFD, FD_CLOEXEC, 0) < 0) {
        report_fd = -1;
        fail(EBADF);
    }
    const char *stdin_arg = argv[i++], *tty = argv[i++], *cgroup = argv[i++];
    const char *uid_arg = argv[i++], *gid_arg = argv[i++];
    unsigned long ngroups = number(argv[i++], MAX_GROUPS);
    if (ngroups + 5 > (unsigned long)(argc - i))
        fail(EINVAL);
    char **group_args = argv + i;
    i += (int)ngroups;
    const char *cwd = argv[i++], *out = argv[i++], *err = argv[i++];
    long env_fd = (long)number(argv[i++], 0x7fffffff);
    unsigned long nenv = number(argv[i++], MAX_ENV);
    if (i + 2 > argc || !same(argv[i], "--"))
        fail(EINVAL); /* "--" and one command word at least */
    char **command = argv + i + 1;
    char **envp = read_env(env_fd, nenv);

    must(sc(SYS_setsid, 0, 0, 0, 0));
    struct kernel_sigaction dfl = {0};
    dfl.handler = SIG_DFL;
    for (long sig = 1; sig <= KERNEL_NSIG; sig++)
        sc(SYS_rt_sigaction, sig, (long)&dfl, 0, sizeof dfl.mask); /* KILL, STOP refuse */
    unsigned long none = 0;
    must(sc(SYS_rt_sigprocmask, SIG_SETMASK, (long)&none, 0, sizeof none));
    if (*cgroup)
        join_cgroup(cgroup);
    long source = same(stdin_arg, "-")
        ? must(sc(SYS_openat, AT_FDCWD, (long)"/dev/null", O_RDONLY | O_CLOEXEC, 0))
        : (long)number(stdin_arg, 0x7fffffff);
    move_fd(source, 0);
    if (source != 0)
        sc(SYS_close, source, 0, 0, 0);
    if (same(tty, "1")) {
        step = "terminal";
        must(sc(SYS_ioctl, 0, TIOCSCTTY, 0, 0)); /* the pty is this session's terminal */
    }
    if (*uid_arg)
        switch_user(uid_arg, gid_arg, ngroups, group_args);
    /* After the switch, which clears it; a supervisor that died before this line is no
     * longer our parent (we were re-parented): end rather than run unsupervised. */
    must(sc(SYS_prctl, PR_SET_PDEATHSIG, SIGKILL, 0, 0));
    if (sc(SYS_getppid, 0, 0, 0, 0) != parent)
        fail(ESRCH);
    step = "working directory";
    step_file = cwd;
    must(sc(SYS_chdir, (long)cwd, 0, 0, 0));
    int truncate = 1; /* the job's SLURM_OPEN_MODE: "a" appends (sbatch --open-mode) */
    for (char **entry = envp; *entry; entry++)
        if (same(*entry, "SLURM_OPEN_MODE=a"))
            truncate = 0;
    if (*out) {
        step = "output file";
        step_file = out;
        open_output(out, 1, truncate);
    }
    if (*err) {
        step = "error file";
        step_file = err;
        open_output(err, 2, truncate);
    }
    if (*out && !*err)
        must(sc(SYS_dup3, 1, 2, 0, 0));
    step = "exec";
    step_file = command[0];
    exec_search(command[0], command, envp);
}
