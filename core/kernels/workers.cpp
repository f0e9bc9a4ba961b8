// Native body of kernels/workers.py: one worker's share of a captured multi-worker step (a *plan*,
// core/simulator.py "_Plan"), replayed without returning to Python between stages.
//
// run_plan_native(plan, n_ops, bar, workers, natives, spin, yields, times, mode, mail, jobs):
//
// mode 0 (run): for k in [0, n_ops) the op (plan[2k], plan[2k + 1]):
//   OP_REPLAY (1), state: replay the CPU graph `state` (an APIC state pointer) by calling Warp's own
//     replay, wp_apic_cpu_replay_state, through its address natives[0] (it returns false on failure);
//   OP_BARRIER (2), 0: wait until all `workers` workers of the partition have reached this barrier.
// Returns 0 when every op ran, k + 1 when op k's replay failed (the barrier is then aborted, so the
// other workers do not wait for this one), -1 when another worker aborted the barrier.
// With times.shape[0] > 0, times[0] gets the monotonic clock (ns) at entry and times[k + 1] after op k,
// times[n_ops + 1 + k] the thread's CPU clock likewise, through clock_gettime at natives[4]
// (benchmarks/profile_threads).
//
// mode 2 (serve): a parked helper (core/simulator.py "_Parked"), which stays in this call between
// plans. `mail` is its mailbox (int32, a 64-byte line per group of words): mail[0] the job generation,
// mail[8..9] the job (a pointer to a record of uint64: ops, n_ops, bar, times, times' length, status),
// mail[16] the generation of the last job done, mail[32] set while the helper sleeps on mail[0],
// mail[33] while the lead sleeps on mail[16], mail[48] the helper's state (1 serving, 2 gone), mail[49]
// the stop request. The helper waits for a new generation (or the stop request), runs the job's ops
// as in mode 0, stores the result in the job's status word, then publishes the generation as done.
// Returns 0 when stopped.
//
// mode 1 (lead): worker 0 of a plan run by parked helpers. jobs holds per helper (mailbox pointer,
// job record pointer); each helper that serves gets its job (the record, then generation + 1, then a
// futex wake when it sleeps); worker 0 runs its own ops (mode 0), then waits until every helper has
// published that generation as done, or has left (state not 1). Returns its own result as mode 0 does,
// or -3 - h when helper h did not serve (the barrier is then aborted: the others do not wait for it).
//
// The barrier (bar: one int32 array, each word on its own 64-byte line): bar[0] counts the arrivals,
// bar[16] is the generation, bar[32] the sleepers, bar[48] the abort flag. The last worker to arrive
// resets the count, then publishes generation + 1 (release; a worker reads the generation before it
// counts itself in, so the reset is visible to it at the next barrier). A waiting worker checks the
// generation `spin` times (a pause instruction each), then `yields` times after a sched_yield
// (natives[3]: the core goes to another runnable thread, such as the worker it waits for when both
// share a core; on an idle core it returns at once), then sleeps: on Linux a futex wait on the
// generation word (libc's syscall at natives[1], the futex number natives[2]), with a 1 ms timeout so
// that an abort is seen without a wake-up; elsewhere more sched_yield. A long spin would starve the
// other workers on a machine with fewer free cores than workers (measured: benchmarks/results/fem.md). The sleeper
// count and the generation are both seq_cst: either the last worker sees the sleeper and wakes it,
// or the sleeper's futex call sees the new generation and returns at once. The mailbox's waits are the
// same (the lead's: spin, yields, then a futex wait with a 1 ms timeout), except that an idle helper
// does not yield: it spins, then sleeps (50 ms timeout) — between plans the calling thread runs Python
// for tens of µs or more, and on a loaded machine a sched_yield can hand the core to another process
// for a whole time slice, delaying the helper's start of the next plan (a woken sleeper is scheduled
// sooner; measured: benchmarks/results/fem.md, round 14).
// Atomics are GCC/Clang's __atomic builtins: Warp's atomic_add is a plain read-modify-write on CPU.

// @func run_plan_native
#if defined(__CUDA_ARCH__)
    return -2;   // CPU only (the replay of CPU graphs); compiled for CUDA with the core's kernels, never launched there
#else
    typedef long (*sys_fn)(long, ...);
    typedef wp::int32 (*yield_fn)(void);
    typedef bool (*replay_fn)(void*);
    typedef wp::int32 (*clock_fn)(wp::int32, void*);
    typedef unsigned long long u64;
    struct ts_t { long sec; long nsec; };
    const u64* nat = (const u64*)natives.data;
    replay_fn replay = (replay_fn)nat[0];
    sys_fn sys = (sys_fn)nat[1];
    const long futex_nr = (long)nat[2];
    yield_fn yield = (yield_fn)nat[3];
    clock_fn clk = (clock_fn)nat[4];
    const bool futex = sys != 0 && futex_nr != 0;
    auto pause = [&]() {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    };
    auto wake = [&](int* word) {
        if (futex)
            sys(futex_nr, word, 129 /* FUTEX_WAKE_PRIVATE */, 0x7fffffff, 0, 0, 0);
    };
    // wait while *word == g and done() is false: spin, `n_yields` yields, then futex waits of timeout_ns
    // on word (flagging `sleeping` around each, so that the writer knows to wake it)
    auto wait_while = [&](int* word, int g, int* sleeping, long timeout_ns, int n_yields, auto done) {
        for (int i = 0; i < spin; ++i) {
            if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != g || done())
                return;
            pause();
        }
        for (int i = 0; i < n_yields && yield != 0; ++i) {
            if (__atomic_load_n(word, __ATOMIC_ACQUIRE) != g || done())
                return;
            yield();
        }
        while (__atomic_load_n(word, __ATOMIC_ACQUIRE) == g && !done()) {
            if (futex) {
                ts_t timeout = {0, timeout_ns};
                __atomic_add_fetch(sleeping, 1, __ATOMIC_SEQ_CST);
                sys(futex_nr, word, 128 /* FUTEX_WAIT_PRIVATE */, g, &timeout, 0, 0);
                __atomic_sub_fetch(sleeping, 1, __ATOMIC_SEQ_CST);
            } else if (yield != 0) {
                yield();
            } else {
                pause();
            }
        }
    };
    // one worker's ops (mode 0): 0, k + 1 when op k's replay failed, -1 when aborted
    auto run_ops = [&](const u64* ops, int n, int* bar, long long* times, long long n_times) -> int {
        int* cnt = bar + 0;
        int* gen = bar + 16;
        int* sleepers = bar + 32;
        int* abort_flag = bar + 48;
        auto aborted = [&]() { return __atomic_load_n(abort_flag, __ATOMIC_ACQUIRE) != 0; };
        auto abort_all = [&]() {
            __atomic_store_n(abort_flag, 1, __ATOMIC_SEQ_CST);
            wake(gen);
        };
        auto barrier = [&]() -> bool {
            const int g = __atomic_load_n(gen, __ATOMIC_ACQUIRE);
            if (__atomic_add_fetch(cnt, 1, __ATOMIC_ACQ_REL) == workers) {
                __atomic_store_n(cnt, 0, __ATOMIC_RELAXED);
                __atomic_store_n(gen, g + 1, __ATOMIC_SEQ_CST);
                if (__atomic_load_n(sleepers, __ATOMIC_SEQ_CST) > 0)
                    wake(gen);
                return !aborted();
            }
            wait_while(gen, g, sleepers, 1000000L, yields, aborted);
            return !aborted();
        };
        const bool timed = n_times > 0;
        auto stamp = [&](int k) {   // the clocks after op k - 1 (k = 0: at entry)
            ts_t t;
            clk(1 /* CLOCK_MONOTONIC */, &t);
            times[k] = (long long)t.sec * 1000000000LL + t.nsec;
            clk(3 /* CLOCK_THREAD_CPUTIME_ID */, &t);
            times[n + 1 + k] = (long long)t.sec * 1000000000LL + t.nsec;
        };
        if (timed)
            stamp(0);
        for (int k = 0; k < n; ++k) {
            if (ops[2 * k] == 1) {
                if (!replay((void*)ops[2 * k + 1])) {
                    abort_all();
                    return k + 1;
                }
            } else if (!barrier()) {
                return -1;
            }
            if (timed)
                stamp(k + 1);
        }
        return 0;
    };
    if (mode == 2) {
        int* mail_p = wp::address(mail, 0);
        int* job_gen = mail_p + 0;
        long long* job_ptr = (long long*)(mail_p + 8);
        int* done_gen = mail_p + 16;
        int* helper_sleeps = mail_p + 32;
        int* lead_sleeps = mail_p + 33;
        int* state = mail_p + 48;
        int* stop = mail_p + 49;
        auto stopping = [&]() { return __atomic_load_n(stop, __ATOMIC_ACQUIRE) != 0; };
        int last = __atomic_load_n(job_gen, __ATOMIC_ACQUIRE);
        __atomic_store_n(state, 1, __ATOMIC_SEQ_CST);
        while (true) {
            wait_while(job_gen, last, helper_sleeps, 50000000L, 0, stopping);
            if (stopping())
                break;
            last = __atomic_load_n(job_gen, __ATOMIC_ACQUIRE);
            const u64* job = (const u64*)__atomic_load_n(job_ptr, __ATOMIC_ACQUIRE);
            const int st = run_ops((const u64*)job[0], (int)job[1], (int*)job[2], (long long*)job[3], (long long)job[4]);
            *(int*)job[5] = st;
            __atomic_store_n(done_gen, last, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(lead_sleeps, __ATOMIC_SEQ_CST) > 0)
                wake(done_gen);
        }
        __atomic_store_n(state, 2, __ATOMIC_SEQ_CST);
        wake(done_gen);
        return 0;
    }
    long long* tp = times.shape[0] > 0 ? wp::address(times, 0) : (long long*)0;
    int* bar_p = wp::address(bar, 0);
    if (mode == 0)
        return run_ops((const u64*)plan.data, n_ops, bar_p, tp, times.shape[0]);
    // mode 1: post the helpers' jobs, run worker 0's ops, wait for the helpers
    const u64* jb = (const u64*)jobs.data;
    const int helpers = jobs.shape[0] / 2;
    int missing = -1;
    int posted[64];
    for (int h = 0; h < helpers && h < 64; ++h) {
        int* m = (int*)jb[2 * h];
        posted[h] = 0;
        if (__atomic_load_n(m + 48, __ATOMIC_SEQ_CST) != 1) {
            if (missing < 0)
                missing = h;
            continue;
        }
        __atomic_store_n((long long*)(m + 8), (long long)jb[2 * h + 1], __ATOMIC_RELEASE);
        posted[h] = __atomic_add_fetch(m + 0, 1, __ATOMIC_SEQ_CST);
        if (__atomic_load_n(m + 32, __ATOMIC_SEQ_CST) > 0)
            wake(m + 0);
    }
    if (missing >= 0) {     // the helpers that got their job leave at their first barrier
        __atomic_store_n(bar_p + 48, 1, __ATOMIC_SEQ_CST);
        wake(bar_p + 16);
    }
    const int own = missing >= 0 ? -1 : run_ops((const u64*)plan.data, n_ops, bar_p, tp, times.shape[0]);
    for (int h = 0; h < helpers && h < 64; ++h) {
        if (posted[h] == 0)
            continue;
        int* m = (int*)jb[2 * h];
        const int g = posted[h];
        auto gone = [&]() { return __atomic_load_n(m + 48, __ATOMIC_ACQUIRE) != 1; };
        while (__atomic_load_n(m + 16, __ATOMIC_ACQUIRE) != g && !gone()) {
            const int d = __atomic_load_n(m + 16, __ATOMIC_ACQUIRE);
            if (d == g)
                break;
            wait_while(m + 16, d, m + 33, 1000000L, yields, gone);
        }
        if (__atomic_load_n(m + 16, __ATOMIC_ACQUIRE) != g && missing < 0)
            missing = h;      // it left without finishing the job (stopped)
    }
    return missing >= 0 ? -3 - missing : own;
#endif
