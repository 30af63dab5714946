#include "addrmap.h"

#include <stdlib.h>

static size_t home(const struct atl_addrmap *m, uint64_t key)
{
    /* allocation bases are aligned: drop the low bits before mixing */
    return (size_t)((key >> 4) * 0x9E3779B97F4A7C15ULL >> 16) & (m->cap - 1);
}

/* The slot holding key, or the empty slot where it would go. */
static size_t probe(const struct atl_addrmap *m, uint64_t key)
{
    size_t i = home(m, key);
    while (m->slots[i].key && m->slots[i].key != key)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static int grow(struct atl_addrmap *m)
{
    size_t cap = m->cap ? m->cap * 2 : 64;
    struct atl_addrmap_slot *old = m->slots;
    size_t oldcap = m->cap;
    struct atl_addrmap_slot *s = calloc(cap, sizeof *s);
    if (!s)
        return -1;
    m->slots = s;
    m->cap = cap;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].key)
            m->slots[probe(m, old[i].key)] = old[i];
    free(old);
    return 0;
}

int atl_addrmap_put(struct atl_addrmap *m, uint64_t key, size_t val)
{
    if (!key)
        return -1;
    if ((m->n + 1) * 2 > m->cap && grow(m) != 0)
        return -1;
    size_t i = probe(m, key);
    if (!m->slots[i].key) {
        m->slots[i].key = key;
        m->n++;
    }
    m->slots[i].val = val;
    return 0;
}

int atl_addrmap_get(const struct atl_addrmap *m, uint64_t key, size_t *val)
{
    if (!m->cap || !key)
        return 0;
    size_t i = probe(m, key);
    if (!m->slots[i].key)
        return 0;
    *val = m->slots[i].val;
    return 1;
}

int atl_addrmap_del(struct atl_addrmap *m, uint64_t key)
{
    if (!m->cap || !key)
        return 0;
    size_t mask = m->cap - 1, i = probe(m, key);
    if (!m->slots[i].key)
        return 0;
    m->slots[i].key = 0;
    m->n--;
    /* shift back the entries whose probe sequence ran through slot i */
    for (size_t j = (i + 1) & mask; m->slots[j].key; j = (j + 1) & mask) {
        size_t h = home(m, m->slots[j].key);
        if (((j - h) & mask) >= ((j - i) & mask)) {
            m->slots[i] = m->slots[j];
            m->slots[j].key = 0;
            i = j;
        }
    }
    return 1;
}

void atl_addrmap_clear(struct atl_addrmap *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->n = 0;
}
