/*
 * What the red-zone check kernels read and write, in one place: the kernels
 * (src/redzone_scan.cu, built to PTX), the engine that launches them and
 * reads their answers (src/redzone_check.c) and the fake driver's host twin of the
 * kernels (tests/fake/fake_redzone.c) all include this file, so the three
 * cannot drift apart. Plain C, valid CUDA C++: fixed-width unsigned fields,
 * no pointers (the device sees these through mapped host memory).
 */
#ifndef ATL_REDZONE_GPU_H
#define ATL_REDZONE_GPU_H

/* One zone to check: its first byte, its length and the fill it must hold. */
struct atl_rz_zone {
    unsigned long long ptr;
    unsigned long long len;
    unsigned int fill;
    unsigned int pad_;
};

/* A zone's verdict: the bytes that differ from the fill, the first and last
 * of them (offsets from the zone's start), and the zone's index in the list
 * the kernel was given. */
struct atl_rz_result {
    unsigned int bad;
    unsigned int first;
    unsigned int last;
    unsigned int zone;
};

/* A range the queued check fills with its fill byte after checking its
 * zones: the body of a freed allocation entering the quarantine (its tail,
 * the red zone, is one of the zones checked). */
struct atl_rz_fill {
    unsigned long long ptr;
    unsigned long long len;
};

/* The queued check's zone list and fill list, passed by value as the
 * kernel's first parameter: the kernel reads them from its parameter space
 * instead of across the bus from mapped host memory, which made a check take
 * several times a tiny kernel's time on the GPU. */
#define ATL_RZ_RECS 4
#define ATL_RZ_SLOT_ZONES 8
#define ATL_RZ_SLOT_FILLS 8
struct atl_rz_list {
    struct atl_rz_zone z[ATL_RZ_SLOT_ZONES];
    struct atl_rz_fill f[ATL_RZ_SLOT_FILLS];
};

/* A queued check of more bytes than one block reads quickly (a freed
 * allocation in the quarantine, checked whole) runs as several blocks; each
 * adds its counts into its slot's merge record in device memory (zeroed when
 * made: `nfirst` holds the complement of the first bad offset, so zero is
 * "none"), and the last block to arrive writes the slot and zeroes the
 * record for the slot's next check. */
struct atl_rz_merge {
    unsigned int arrived;
    unsigned int pad_;
    unsigned int bad[ATL_RZ_SLOT_ZONES];
    unsigned int nfirst[ATL_RZ_SLOT_ZONES];
    unsigned int last[ATL_RZ_SLOT_ZONES];
};

/* atl_redzone_check_launch's answer, one slot of a ring in mapped host
 * memory. The host zeroes nbad and passes the slot; the kernel writes, only
 * when a zone is corrupted, nbad and the first ATL_RZ_RECS corrupted zones
 * followed by a system-wide fence, and in every case, last, `done` = the
 * ticket it was given, so the host reads a slot only once it is complete. A
 * clean check thus writes one word across the bus and waits for nothing. */
struct atl_rz_slot {
    unsigned long long done;
    unsigned int nbad;
    unsigned int pad_;
    struct atl_rz_result rec[ATL_RZ_RECS];
};

/* The kernels' entry names (and what the fake driver looks for in the PTX). */
#define ATL_RZ_SCAN_ENTRY "atl_redzone_scan"
#define ATL_RZ_CHECK_ENTRY "atl_redzone_check_launch"

#endif
