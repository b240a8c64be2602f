/*
 * inject/hijack.h - hold a live, unmodified process with ptrace and make one
 * of its threads call a function.
 *
 * Life of a hold (each transition names the function that performs it):
 *
 *   (free) --hijack_attach--> HELD: every thread seized and stopped
 *   (one thread already ours, stopped) --hijack_adopt--> HELD
 *   HELD --hijack_stage--> HELD with data on the call thread's stack
 *   HELD --hijack_call--> RUNNING the call --(return trap)--> HELD
 *   HELD --hijack_detach--> (free): every thread running as if never touched
 *
 * Invariants: while HELD every live thread is in a ptrace-stop and its
 * registers at that stop are known (hijack_threads); everything hijack_call
 * changes (registers, FP/vector state, the return-address slot, staged
 * bytes) is put back before it returns, whatever the outcome; signals that
 * arrive for a held thread are kept and re-delivered at detach, each with
 * its own siginfo (a blocked one by then: from our pid); no error
 * path leaves the target stopped or traced.
 *
 * Callers: inject/inject.c (agent start/stop) and tests/unit/test-hijack.c.
 * Errors: 0 or -errno, with a one-line reason in *cause (share/log.h).
 */
#ifndef PROPEL_INJECT_HIJACK_H
#define PROPEL_INJECT_HIJACK_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "share/agent-abi.h"

struct hijack;

/* hijack_call flags */
#define HIJACK_OTHERS_RUN 1u /* let the other threads run during the call */

#define HIJACK_CALL_TIMEOUT_MS 10000

/* Seize and stop every thread of pid.  On error nothing is left traced. */
int hijack_attach(pid_t pid, struct hijack **out, char **cause);

/* A hold of pid built on a thread tid that the caller already traces
 * (PTRACE_SEIZE'd by this process) and that is in a ptrace-stop: the
 * other threads are seized and stopped as by hijack_attach, and
 * hijack_detach lets go of every one, tid included. */
int hijack_adopt(pid_t pid, pid_t tid, struct hijack **out, char **cause);

/* Detach every thread (restoring anything still staged), re-deliver the
 * signals that arrived meanwhile, and free h.  Returns 0 or -errno of the
 * first thread that could not be detached. */
int hijack_detach(struct hijack *h);

/* Free without detaching (only after hijack_detach, or for a NULL h). */
void hijack_free(struct hijack *h);

pid_t hijack_pid(const struct hijack *h);

/* tid, pc, sp of every stopped thread, as they were when stopped (a
 * malloc'd array the caller frees). */
int hijack_threads(struct hijack *h, struct propel_thread_hint **hints,
		   size_t *n);

/* Resolve a dynamic symbol of a library mapped in the target: lib is a full
 * path, or a file name ("libc.so.6"), or its stem ("libc"). */
int hijack_sym(struct hijack *h, const char *lib, const char *sym,
	       uint64_t *addr, char **cause);

/* As hijack_sym, without a hold: an IFUNC (which needs a call) is
 * -ENOENT. */
int hijack_sym_noexec(pid_t pid, const char *lib, const char *sym,
		      uint64_t *addr, char **cause);

/* Without ptrace: the full path of the mapped file matching lib (as in
 * hijack_sym), 0 or -ENOENT.  *path is malloc'd. */
int hijack_find_lib(pid_t pid, const char *lib, char **path);

/* Without ptrace: 1 if pid's executable is dynamically linked (has an
 * interpreter), 0 if static, -errno if it cannot be read. */
int hijack_exe_dynamic(pid_t pid);

/* 1 if the mapped file path is lib: lib a full path, a file name
 * ("libc.so.6") or its stem ("libc"), as hijack_sym takes it. */
int hijack_lib_matches(const char *path, const char *lib);

/* Where the thread that will run calls was stopped: tid, pc, sp and sys
 * (-1 in user code); sys_arg is left 0.  -ESRCH without a stopped
 * thread. */
int hijack_call_thread_hint(struct hijack *h, struct propel_thread_hint *out);

/* inject/hijack-where.c: */

/* 1 if the thread that will run calls stopped in a mapped file, its path
 * in path[n]; else 0. */
int hijack_call_thread_file(struct hijack *h, char *path, size_t n);

/* 1 if a frame of the stack of the thread that will run calls lies in lib
 * (unwound through .eh_frame with libdwfl), else 0. */
int hijack_call_thread_calls_from(struct hijack *h, const char *lib);

/* pc of pid as FILE+OFFSET (the file's basename and the offset in it), or
 * the bare address outside any mapping, in out[n]. */
void hijack_where(pid_t pid, uint64_t pc, char *out, size_t n);

/* The system call the thread that will run calls was stopped in (its
 * number), or -1 if it was stopped in user code. */
long hijack_call_thread_syscall(struct hijack *h);

/* Choose the thread that will run calls (default: one blocked in a
 * restartable syscall, else one in user code). */
int hijack_set_call_thread(struct hijack *h, pid_t tid);
pid_t hijack_call_thread(struct hijack *h);
/* The call thread's thread pointer (fs_base, as it was stopped), 0 if
 * there is no call thread (inject.c: where its errno lives). */
uint64_t hijack_call_thread_tp(struct hijack *h);

/* Per-call timeout in ms (default HIJACK_CALL_TIMEOUT_MS). */
void hijack_set_timeout(struct hijack *h, int ms);

/* Copy n bytes onto the call thread's stack below its red zone, for the
 * next hijack_call; *addr is where they are in the target.  The original
 * bytes are put back when that call returns (or at detach). */
int hijack_stage(struct hijack *h, const void *buf, size_t n, uint64_t *addr);

/* The way back from the next calls.  pad 0 (the default): the callee
 * returns to address 0, whose fault the tracer takes -- if the tracer dies
 * during the call, the target dies of it.  Else pad is code in the target
 * ending in rt_sigreturn and the call returns through a signal frame that
 * puts the thread back by itself if the tracer is gone (hijack-ret.c):
 *   result 0: pad is glibc's __restore_rt (hijack_restore_rt); the call
 *     runs under PTRACE_SYSCALL and is taken at that rt_sigreturn; *ret
 *     is 0 (rax is lost).
 *   else: pad is the agent's PROPEL_AGENT_RETURN_SYM (HIJACK_PAD_SIZE
 *     bytes), which stores rax at result and 1 at result + 8, then waits
 *     a moment before its rt_sigreturn; the call runs free (no syscall
 *     stops), and is taken in the pad when result + 8 says so (or just
 *     after it, put back by itself); *ret is the 8 bytes at result.
 * A call whose frame cannot be built goes the plain way. */
#define HIJACK_PAD_SIZE 128
void hijack_set_return(struct hijack *h, uint64_t pad, uint64_t result);

/* 1 if the last hijack_call's thread came back by itself: taken after its
 * pad ran out (we were late), it has run the program since and is held
 * wherever it was then -- not where hijack_attach found it, nor anywhere
 * a caller chose (inject.c looks again before its next call). */
int hijack_call_escaped(const struct hijack *h);

/* glibc's __restore_rt in the target's libc (`mov $15, %rax; syscall`), a
 * pad for hijack_set_return; 0 when none is found (inject/hijack-ret.c). */
uint64_t hijack_restore_rt(struct hijack *h);

/* Make the call thread run fn(args[0..nargs-1]) (at most 6 integer
 * arguments) and come back; *ret is rax.  -ETIMEDOUT after the timeout
 * (the call is abandoned, registers restored), -EFAULT if it faulted,
 * -ESRCH if the process died. */
int hijack_call(struct hijack *h, uint64_t fn, const uint64_t *args, int nargs,
		unsigned flags, uint64_t *ret, char **cause);

/* Memory of the target (through /proc/PID/mem: works on read-only pages).
 * Return 0 or -errno (-EIO on a short transfer). */
int hijack_read(struct hijack *h, uint64_t addr, void *buf, size_t n);
int hijack_write(struct hijack *h, uint64_t addr, const void *buf, size_t n);

/* Read a NUL-terminated string of at most max-1 bytes; malloc'd. */
int hijack_read_str(struct hijack *h, uint64_t addr, size_t max, char **out);

/* The pause between two polls of a stopped target (waitpid WNOHANG): short
 * while a stop or a remote call is still likely (the target waits, stopped,
 * for as long as we sleep past its stop), longer after.  Zero it to begin. */
struct hijack_nap {
	unsigned polls;
};
void hijack_nap(struct hijack_nap *n);

#endif
