// Native body of kernels/workers.py: one worker's share of a captured multi-worker step (a *plan*,
// core/simulator.py "_Plan"), replayed without returning to Python between stages.
//
// run_plan_native(plan, n_ops, bar, workers, natives, spin, yields, times): for k in [0, n_ops) the op
// (plan[2k], plan[2k + 1]):
//   OP_REPLAY (1), state: replay the CPU graph `state` (an APIC state pointer) by calling Warp's own
//     replay, wp_apic_cpu_replay_state, through its address natives[0] (it returns false on failure);
//   OP_BARRIER (2), 0: wait until all `workers` workers of the partition have reached this barrier.
// Returns 0 when every op ran, k + 1 when op k's replay failed (the barrier is then aborted, so the
// other workers do not wait for this one), -1 when another worker aborted the barrier.
// With times.shape[0] > 0, times[0] gets the monotonic clock (ns) at entry and times[k + 1] after op k,
// times[n_ops + 1 + k] the thread's CPU clock likewise, through clock_gettime at natives[4]
// (benchmarks/profile_threads).
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
// or the sleeper's futex call sees the new generation and returns at once.
// Atomics are GCC/Clang's __atomic builtins: Warp's atomic_add is a plain read-modify-write on CPU.

// @func run_plan_native
#if defined(__CUDA_ARCH__)
    return -2;   // CPU only (the replay of CPU graphs); compiled for CUDA with the core's kernels, never launched there
#else
    typedef long (*sys_fn)(long, ...);
    typedef wp::int32 (*yield_fn)(void);
    typedef bool (*replay_fn)(void*);
    typedef wp::int32 (*clock_fn)(wp::int32, void*);
    struct ts_t { long sec; long nsec; };
    int* cnt = wp::address(bar, 0);
    int* gen = wp::address(bar, 16);
    int* sleepers = wp::address(bar, 32);
    int* abort_flag = wp::address(bar, 48);
    const unsigned long long* nat = (const unsigned long long*)natives.data;
    replay_fn replay = (replay_fn)nat[0];
    sys_fn sys = (sys_fn)nat[1];
    const long futex_nr = (long)nat[2];
    yield_fn yield = (yield_fn)nat[3];
    clock_fn clk = (clock_fn)nat[4];
    const bool timed = times.shape[0] > 0;
    auto pause = [&]() {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#elif defined(__aarch64__)
        __asm__ __volatile__("yield");
#endif
    };
    auto abort_all = [&]() {
        __atomic_store_n(abort_flag, 1, __ATOMIC_SEQ_CST);
        if (sys != 0 && futex_nr != 0)
            sys(futex_nr, gen, 129 /* FUTEX_WAKE_PRIVATE */, 0x7fffffff, 0, 0, 0);
    };
    auto barrier = [&]() -> bool {
        const int g = __atomic_load_n(gen, __ATOMIC_ACQUIRE);
        if (__atomic_add_fetch(cnt, 1, __ATOMIC_ACQ_REL) == workers) {
            __atomic_store_n(cnt, 0, __ATOMIC_RELAXED);
            __atomic_store_n(gen, g + 1, __ATOMIC_SEQ_CST);
            if (__atomic_load_n(sleepers, __ATOMIC_SEQ_CST) > 0 && sys != 0 && futex_nr != 0)
                sys(futex_nr, gen, 129 /* FUTEX_WAKE_PRIVATE */, 0x7fffffff, 0, 0, 0);
            return __atomic_load_n(abort_flag, __ATOMIC_ACQUIRE) == 0;
        }
        for (int i = 0; i < spin; ++i) {
            if (__atomic_load_n(gen, __ATOMIC_ACQUIRE) != g || __atomic_load_n(abort_flag, __ATOMIC_RELAXED) != 0)
                break;
            pause();
        }
        for (int i = 0; i < yields && yield != 0; ++i) {
            if (__atomic_load_n(gen, __ATOMIC_ACQUIRE) != g || __atomic_load_n(abort_flag, __ATOMIC_RELAXED) != 0)
                break;
            yield();
        }
        while (__atomic_load_n(gen, __ATOMIC_ACQUIRE) == g && __atomic_load_n(abort_flag, __ATOMIC_ACQUIRE) == 0) {
            if (sys != 0 && futex_nr != 0) {
                ts_t timeout = {0, 1000000};
                __atomic_add_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
                sys(futex_nr, gen, 128 /* FUTEX_WAIT_PRIVATE */, g, &timeout, 0, 0);
                __atomic_sub_fetch(sleepers, 1, __ATOMIC_SEQ_CST);
            } else if (yield != 0) {
                yield();
            } else {
                pause();
            }
        }
        return __atomic_load_n(abort_flag, __ATOMIC_ACQUIRE) == 0;
    };
    auto stamp = [&](int k) {   // the clocks after op k - 1 (k = 0: at entry)
        ts_t t;
        clk(1 /* CLOCK_MONOTONIC */, &t);
        *wp::address(times, k) = (long long)t.sec * 1000000000LL + t.nsec;
        clk(3 /* CLOCK_THREAD_CPUTIME_ID */, &t);
        *wp::address(times, n_ops + 1 + k) = (long long)t.sec * 1000000000LL + t.nsec;
    };
    if (timed)
        stamp(0);
    const unsigned long long* ops = (const unsigned long long*)plan.data;
    for (int k = 0; k < n_ops; ++k) {
        const unsigned long long kind = ops[2 * k];
        if (kind == 1) {
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
#endif
