/*
 * A map from a nonzero address to a size_t, for exact lookups that must
 * stay O(1) with a million entries (the red-zone table's "zone of this
 * allocation base"). Open addressing, linear probing, deletion by shifting
 * back; not thread-safe: the owner locks.
 */
#ifndef ATL_ADDRMAP_H
#define ATL_ADDRMAP_H

#include <stddef.h>
#include <stdint.h>

struct atl_addrmap {
    struct atl_addrmap_slot {
        uint64_t key; /* 0: empty */
        size_t val;
    } *slots;
    size_t cap; /* 0 or a power of two, at least twice n */
    size_t n;
};

/* Sets key's value (adds or overwrites). 0, or -1 when out of memory. */
int atl_addrmap_put(struct atl_addrmap *m, uint64_t key, size_t val);

/* 1 and *val when key is present, else 0. */
int atl_addrmap_get(const struct atl_addrmap *m, uint64_t key, size_t *val);

/* Removes key; 1 if it was present. */
int atl_addrmap_del(struct atl_addrmap *m, uint64_t key);

/* Empties the map and frees its memory. */
void atl_addrmap_clear(struct atl_addrmap *m);

#endif
