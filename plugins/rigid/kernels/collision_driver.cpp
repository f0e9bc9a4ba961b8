// Native bodies of collision_driver.py's wp.func_native functions (loader: native.py).

// @func prune_export_prefetch_native
    // CPU, prefetch != 0: the next env's contact rows that prune_export writes (the pipeline's contact set and the
    // constraint builder's count, dist and links), as write prefetches into L1 issued when this env's pruning starts;
    // the next env's count is not known yet, so its count of the last launch stands in for it (a settled scene's
    // count changes little from one substep to the next), bounded to 64 contacts (a large env's rows would evict
    // this env's own). Only where the lines are: no value is read or written, so the results are unchanged
    // (benchmarks/results/constraint.md, Round 14 (collision)).
#if !defined(__CUDA_ARCH__)
    if (prefetch != 0 && env + 1 < contact_count.shape[0]) {
        const size_t e1 = (size_t)env + 1;
        int nc1 = *(const int*)((const char*)contact_count.data + e1 * contact_count.strides[0]);
        if (nc1 > contact_pos.shape[1]) nc1 = contact_pos.shape[1];
        if (nc1 > 64) nc1 = 64;
        const size_t c1 = (size_t)(nc1 > 0 ? nc1 : 0);
        const char* wr[8] = {(const char*)contact_geom.data + e1 * contact_geom.strides[0],
                             (const char*)contact_pos.data + e1 * contact_pos.strides[0],
                             (const char*)contact_frame.data + e1 * contact_frame.strides[0],
                             (const char*)contact_depth.data + e1 * contact_depth.strides[0],
                             (const char*)contact_includemargin.data + e1 * contact_includemargin.strides[0],
                             (const char*)contact_pair.data + e1 * contact_pair.strides[0],
                             (const char*)con_dist.data + e1 * con_dist.strides[0],
                             (const char*)con_link.data + e1 * con_link.strides[0]};
        const size_t wrb[8] = {c1 * contact_geom.strides[1], c1 * contact_pos.strides[1], c1 * contact_frame.strides[1],
                               c1 * contact_depth.strides[1], c1 * contact_includemargin.strides[1],
                               c1 * contact_pair.strides[1], c1 * con_dist.strides[1], c1 * con_link.strides[1]};
        for (int a = 0; a < 8; ++a)
            for (size_t l = 0; l < wrb[a]; l += 64) __builtin_prefetch(wr[a] + l, 1, 3);
    }
#endif
