/* prep.tokenizer._bpe: the exact BPE trainer of docs/tokenizer.md, compiled.
 *
 * The same algorithm as prep/tokenizer/bpe.py (the pure-Python fallback); both must give
 * the rules' merges, and the tests hold both to a naive reference.
 *
 * Layout: the corpus is one flat array of positions, documents separated by SEP. A live
 * token starts at a position whose node holds its id; the positions it covers after the
 * first hold DEAD. A node also holds the token's length (valid at its first and its last
 * position), so the next token starts at i + span[i] and the previous one at
 * i - span[i - 1] (a doubly linked list without pointers), and the pair the token forms with
 * the next one: 12 bytes a position, one cache line a visit. Each pair has a 64-bit count
 * and the positions where it started when it was counted, ascending (every pair is created
 * during one pass, which visits positions in order); an entry is checked, not trusted, when
 * used. A max-heap of (count, pair) with lazy deletion picks the winner: an entry's count is
 * an upper bound of the pair's (only pairs holding the newest id ever gain), so the first
 * entry whose count is exact is the winner, ties to the smaller (left, right).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SEP 0xFFFFFFFFu
#define DEAD 0xFFFFFFFEu
#define NONE 0xFFFFFFFFu
/* Positions and ids are 32-bit: the corpus must leave room for every id a merge creates. */
#define MAX_POSITIONS (0xFFFFFFFFull - 1024ull)
/* Positions ahead whose node is fetched while this one is merged: a pair's positions are
 * ascending but far apart, and each would otherwise wait for memory. */
#define PREFETCH 8

typedef struct {
    uint64_t key; /* left << 32 | right */
    uint32_t *pos;
    uint32_t len, cap;
    uint64_t stamp; /* the merge that last created occurrences of it (heap push once) */
} Pair;

typedef struct {
    int64_t count;
    uint64_t key;
    uint32_t pair;
} Entry;

/* One position: its id (or SEP, DEAD), its token's length (at its first and last position)
 * and the pair the token starting here forms with the next (NONE if none). Together, so
 * that visiting a position costs one cache line, not three. */
typedef struct {
    uint32_t tok, span, at;
} Node;

typedef struct {
    PyObject_HEAD
    Node *node;
    uint64_t n;
    Pair *pairs;
    int64_t *count; /* apart from the pairs: the hot path (a neighbour's pair losing one)
                       touches only this, 8 bytes a pair */
    uint64_t n_pairs, cap_pairs, cap_count;
    uint32_t *table; /* open addressing: pair index + 1, 0 empty */
    uint64_t table_cap;
    Entry *heap;
    uint64_t heap_len, heap_cap;
    uint32_t *touched;
    uint64_t n_touched, cap_touched;
    uint32_t *left_of, *right_of; /* during a merge into c: (x, c) and (c, y) by x, y */
    uint64_t cap_side;
    uint32_t *weight; /* per position: the multiplicity of its piece (NULL: all 1) */
    uint32_t next_id;
    int64_t min_freq;
    uint64_t merges;
} Trainer;

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

static int grow(void **p, uint64_t *cap, uint64_t need, size_t item) {
    if (need <= *cap) return 0;
    uint64_t c = *cap ? *cap : 16;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * item);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static int table_rehash(Trainer *t, uint64_t cap) {
    uint32_t *tab = calloc(cap, sizeof(uint32_t));
    if (!tab) return -1;
    for (uint64_t i = 0; i < t->n_pairs; i++) {
        uint64_t h = mix(t->pairs[i].key) & (cap - 1);
        while (tab[h]) h = (h + 1) & (cap - 1);
        tab[h] = (uint32_t)(i + 1);
    }
    free(t->table);
    t->table = tab;
    t->table_cap = cap;
    return 0;
}

/* The pair's index, created with count 0 when absent; NONE when memory ran out. */
static uint32_t pair_of(Trainer *t, uint64_t key) {
    uint64_t mask = t->table_cap - 1, h = mix(key) & mask;
    while (t->table[h]) {
        uint32_t i = t->table[h] - 1;
        if (t->pairs[i].key == key) return i;
        h = (h + 1) & mask;
    }
    if ((t->n_pairs + 1) * 2 > t->table_cap) {
        if (t->n_pairs + 1 >= 0xFFFFFFFEull || table_rehash(t, t->table_cap * 2)) return NONE;
        return pair_of(t, key);
    }
    if (grow((void **)&t->pairs, &t->cap_pairs, t->n_pairs + 1, sizeof(Pair)) ||
        grow((void **)&t->count, &t->cap_count, t->n_pairs + 1, sizeof(int64_t)))
        return NONE;
    uint32_t i = (uint32_t)t->n_pairs++;
    Pair *p = &t->pairs[i];
    p->key = key;
    t->count[i] = 0;
    p->pos = NULL;
    p->len = p->cap = 0;
    p->stamp = UINT64_MAX;
    t->table[h] = i + 1;
    return i;
}

static int pos_push(Pair *p, uint32_t at) {
    if (p->len == p->cap) {
        uint64_t cap = p->cap;
        if (grow((void **)&p->pos, &cap, (uint64_t)p->len + 1, sizeof(uint32_t))) return -1;
        p->cap = (uint32_t)cap;
    }
    p->pos[p->len++] = at;
    return 0;
}

/* Heap order: higher count first, then the smaller (left, right). */
static int above(const Entry *a, const Entry *b) {
    return a->count > b->count || (a->count == b->count && a->key < b->key);
}

static int heap_push(Trainer *t, uint32_t pair) {
    if (grow((void **)&t->heap, &t->heap_cap, t->heap_len + 1, sizeof(Entry))) return -1;
    Entry e = {t->count[pair], t->pairs[pair].key, pair};
    uint64_t i = t->heap_len++;
    while (i > 0) {
        uint64_t up = (i - 1) / 2;
        if (!above(&e, &t->heap[up])) break;
        t->heap[i] = t->heap[up];
        i = up;
    }
    t->heap[i] = e;
    return 0;
}

static Entry heap_pop(Trainer *t) {
    Entry top = t->heap[0], last = t->heap[--t->heap_len];
    uint64_t i = 0, n = t->heap_len;
    for (;;) {
        uint64_t c = 2 * i + 1;
        if (c >= n) break;
        if (c + 1 < n && above(&t->heap[c + 1], &t->heap[c])) c++;
        if (!above(&t->heap[c], &last)) break;
        t->heap[i] = t->heap[c];
        i = c;
    }
    if (n) t->heap[i] = last;
    return top;
}

static void Trainer_dealloc(Trainer *t) {
    free(t->node);
    free(t->weight);
    free(t->left_of);
    free(t->right_of);
    for (uint64_t i = 0; i < t->n_pairs; i++) free(t->pairs[i].pos);
    free(t->pairs);
    free(t->count);
    free(t->table);
    free(t->heap);
    free(t->touched);
    Py_TYPE(t)->tp_free((PyObject *)t);
}

#define KEY(a, b) (((uint64_t)(a) << 32) | (uint64_t)(b))
#define WEIGHT(t, i) ((t)->weight ? (int64_t)(t)->weight[i] : 1)

/* Count every adjacent pair, sizes first, so each list is allocated once, exactly (none for
 * a pair below min_freq: it can never win, old pairs only lose). The hash table is needed
 * only here: afterwards pair_at[] names the pair at a position, and a merge into c finds
 * its new pairs through left_of/right_of. */
static int count_all(Trainer *t) {
    uint64_t n = t->n;
    for (uint64_t i = 0; i < n; i++) {
        t->node[i].at = NONE;
        if (i + 1 == n || t->node[i].tok == SEP || t->node[i + 1].tok == SEP) continue;
        uint32_t p = pair_of(t, KEY(t->node[i].tok, t->node[i + 1].tok));
        if (p == NONE) return -1;
        t->count[p] += WEIGHT(t, i);
        t->pairs[p].cap++; /* its list's size: the occurrences (the count with weights) */
        t->node[i].at = p;
    }
    free(t->table);
    t->table = NULL;
    t->table_cap = 0;
    for (uint64_t i = 0; i < t->n_pairs; i++) {
        Pair *p = &t->pairs[i];
        if (t->count[i] < t->min_freq) {
            p->cap = 0;
            continue;
        }
        p->pos = malloc((size_t)p->cap * sizeof(uint32_t));
        if (!p->pos) return -1;
    }
    for (uint64_t i = 0; i < n; i++) {
        if (t->node[i].at == NONE) continue;
        Pair *p = &t->pairs[t->node[i].at];
        if (p->pos) p->pos[p->len++] = (uint32_t)i;
    }
    for (uint64_t i = 0; i < t->n_pairs; i++)
        if (t->count[i] >= t->min_freq && heap_push(t, (uint32_t)i)) return -1;
    return 0;
}

static int Trainer_init(Trainer *t, PyObject *args, PyObject *kw) {
    static char *names[] = {"sequence", "next_id", "min_freq", "weights", NULL};
    Py_buffer buf, wbuf = {0};
    unsigned long long next_id;
    long long min_freq;
    PyObject *weights = Py_None;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*KL|O", names, &buf, &next_id, &min_freq,
                                     &weights))
        return -1;
    if (weights != Py_None && PyObject_GetBuffer(weights, &wbuf, PyBUF_SIMPLE)) {
        PyBuffer_Release(&buf);
        return -1;
    }
    if (buf.len % 4) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "sequence: a buffer of uint32 ids");
        return -1;
    }
    uint64_t n = (uint64_t)buf.len / 4;
    if (n > MAX_POSITIONS || next_id >= DEAD - n || min_freq < 1 || t->node) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "corpus too large for 32-bit positions, or bad "
                                          "next_id/min_freq, or initialised twice");
        return -1;
    }
    t->n = n;
    t->next_id = (uint32_t)next_id;
    t->min_freq = min_freq;
    t->node = malloc((n ? n : 1) * sizeof(Node));
    t->table_cap = 1 << 16;
    t->table = calloc(t->table_cap, sizeof(uint32_t));
    if (!t->node || !t->table) {
        PyBuffer_Release(&buf);
        PyErr_NoMemory();
        return -1;
    }
    const uint32_t *ids = buf.buf;
    for (uint64_t i = 0; i < n; i++) t->node[i].tok = ids[i];
    PyBuffer_Release(&buf);
    if (weights != Py_None) {
        /* one uint32 weight per document (SEP-terminated run), spread over its positions */
        const uint32_t *w = wbuf.buf;
        uint64_t docs = (uint64_t)wbuf.len / 4, d = 0;
        t->weight = malloc((n ? n : 1) * sizeof(uint32_t));
        if (!t->weight) {
            PyBuffer_Release(&wbuf);
            PyErr_NoMemory();
            return -1;
        }
        for (uint64_t i = 0; i < n; i++) {
            if (d >= docs || w[d] == 0) {
                PyBuffer_Release(&wbuf);
                PyErr_SetString(PyExc_ValueError, "weights: one positive uint32 per document");
                return -1;
            }
            t->weight[i] = w[d];
            if (t->node[i].tok == SEP) d++;
        }
        PyBuffer_Release(&wbuf);
        if (d != docs) {
            PyErr_SetString(PyExc_ValueError, "weights: one positive uint32 per document");
            return -1;
        }
    }
    for (uint64_t i = 0; i < n; i++) {
        if (t->node[i].tok == DEAD || (t->node[i].tok != SEP && t->node[i].tok >= t->next_id)) {
            PyErr_Format(PyExc_ValueError, "id %u at %llu is not below next_id", t->node[i].tok,
                         (unsigned long long)i);
            return -1;
        }
        t->node[i].span = 1;
    }
    int failed;
    Py_BEGIN_ALLOW_THREADS failed = count_all(t);
    Py_END_ALLOW_THREADS if (failed) {
        PyErr_NoMemory();
        return -1;
    }
    return 0;
}

/* An old pair lost an occurrence; below min_freq it can never win again: drop its list. */
static void dec(Trainer *t, uint32_t p, int64_t w) {
    if ((t->count[p] -= w) >= t->min_freq) return;
    Pair *q = &t->pairs[p];
    if (q->stamp != t->merges && q->pos) {
        free(q->pos);
        q->pos = NULL;
        q->len = q->cap = 0;
    }
}

/* The pair (a, b) of the merge into c (one of a, b is c), new in this merge, with one more
 * occurrence at `at`; NONE when memory ran out. */
static uint32_t inc(Trainer *t, uint32_t *slot, uint64_t key, uint32_t at, int64_t w) {
    uint32_t p = *slot;
    if (p == NONE) {
        if (t->n_pairs + 1 >= NONE ||
            grow((void **)&t->pairs, &t->cap_pairs, t->n_pairs + 1, sizeof(Pair)) ||
            grow((void **)&t->count, &t->cap_count, t->n_pairs + 1, sizeof(int64_t)) ||
            grow((void **)&t->touched, &t->cap_touched, t->n_touched + 1, sizeof(uint32_t)))
            return NONE;
        p = (uint32_t)t->n_pairs++;
        Pair *q = &t->pairs[p];
        q->key = key;
        t->count[p] = 0;
        q->pos = NULL;
        q->len = q->cap = 0;
        q->stamp = t->merges;
        t->touched[t->n_touched++] = p;
        *slot = p;
    }
    t->count[p] += w;
    return pos_push(&t->pairs[p], at) ? NONE : p;
}

static int sides_ready(Trainer *t, uint32_t c) {
    uint64_t old = t->cap_side;
    if (grow((void **)&t->left_of, &t->cap_side, (uint64_t)c + 1, sizeof(uint32_t))) return -1;
    t->cap_side = old;
    if (grow((void **)&t->right_of, &t->cap_side, (uint64_t)c + 1, sizeof(uint32_t)))
        return -1;
    for (uint64_t k = old; k < t->cap_side; k++) t->left_of[k] = t->right_of[k] = NONE;
    return 0;
}

/* Replace every occurrence of pair w, left to right without overlap; -1 when out of memory,
 * -2 when the counts disagree with the sequence (a bug). */
static int merge(Trainer *t, uint32_t w) {
    Node *nd = t->node;
    uint32_t c = t->next_id;
    uint32_t a = (uint32_t)(t->pairs[w].key >> 32);
    uint32_t *pos = t->pairs[w].pos, len = t->pairs[w].len;
    uint64_t n = t->n;
    if (sides_ready(t, c)) return -1;
    t->pairs[w].pos = NULL;
    t->pairs[w].len = t->pairs[w].cap = 0;
    t->n_touched = 0;
    int rc = 0;
    for (uint32_t k = 0; k < len && rc == 0; k++) {
        uint32_t i = pos[k];
        if (k + PREFETCH < len) __builtin_prefetch(&nd[pos[k + PREFETCH]], 1);
        if ((k && pos[k - 1] == i) || nd[i].tok != a || nd[i].at != w) continue;
        uint64_t j = (uint64_t)i + nd[i].span;
        uint64_t after = j + nd[j].span;
        int64_t wt = WEIGHT(t, i);
        if (i > 0 && nd[i - 1].tok != SEP) {
            uint32_t p = i - nd[i - 1].span, x = nd[p].tok;
            dec(t, nd[p].at, wt);
            /* (c, c) has one slot, left_of[c], whichever side finds it */
            nd[p].at = inc(t, &t->left_of[x], KEY(x, c), p, wt);
            if (nd[p].at == NONE) rc = -1;
        }
        t->count[w] -= wt;
        nd[i].at = NONE;
        if (after < n && nd[after].tok != SEP) {
            uint32_t y = nd[after].tok;
            dec(t, nd[j].at, wt);
            nd[i].at = inc(t, y == c ? &t->left_of[c] : &t->right_of[y], KEY(c, y), i, wt);
            if (nd[i].at == NONE) rc = -1;
        }
        uint32_t joined = nd[i].span + nd[j].span;
        nd[i].span = joined;
        nd[after - 1].span = joined;
        nd[j].tok = DEAD;
        nd[i].tok = c;
    }
    free(pos);
    for (uint64_t k = 0; k < t->n_touched; k++) {
        Pair *q = &t->pairs[t->touched[k]];
        uint32_t x = (uint32_t)(q->key >> 32), y = (uint32_t)q->key;
        if (y == c) t->left_of[x] = NONE;
        if (x == c) t->right_of[y] = NONE;
        if (rc) continue;
        if (t->count[t->touched[k]] >= t->min_freq) {
            /* the list is complete: give a long one's doubling slack back */
            uint32_t *fit = q->len >= 256 ? realloc(q->pos, (size_t)q->len * 4) : NULL;
            if (fit) {
                q->pos = fit;
                q->cap = q->len;
            }
            if (heap_push(t, t->touched[k])) rc = -1;
        } else {
            free(q->pos);
            q->pos = NULL;
            q->len = q->cap = 0;
        }
    }
    if (rc) return rc;
    return t->count[w] != 0 ? -2 : 0;
}

/* The next winner (its pair index), or NONE when no pair reaches min_freq. */
static uint32_t select_winner(Trainer *t, int *err) {
    while (t->heap_len) {
        Entry e = heap_pop(t);
        int64_t now = t->count[e.pair];
        if (now == e.count) return e.pair;
        if (now >= t->min_freq && heap_push(t, e.pair)) {
            *err = -1;
            return NONE;
        }
    }
    return NONE;
}

static PyObject *Trainer_step(Trainer *t, PyObject *args) {
    unsigned long long want;
    if (!PyArg_ParseTuple(args, "K", &want)) return NULL;
    if (!t->node) {
        PyErr_SetString(PyExc_ValueError, "Trainer not initialised");
        return NULL;
    }
    PyObject *out = PyList_New(0);
    if (!out) return NULL;
    for (unsigned long long k = 0; k < want; k++) {
        int err = 0;
        uint32_t w;
        int64_t count = 0;
        Py_BEGIN_ALLOW_THREADS w = select_winner(t, &err);
        if (w != NONE && t->next_id >= DEAD - 1) err = -3;
        if (w != NONE && !err) {
            count = t->count[w]; /* what is merged, before it drops to 0 */
            err = merge(t, w);
        }
        Py_END_ALLOW_THREADS if (err) {
            Py_DECREF(out);
            if (err == -1) return PyErr_NoMemory();
            PyErr_SetString(PyExc_RuntimeError, err == -3 ? "32-bit ids exhausted"
                                                          : "BPE counts disagree with the "
                                                            "sequence (a bug in prep)");
            return NULL;
        }
        if (w == NONE) break;
        Pair *p = &t->pairs[w];
        PyObject *item = Py_BuildValue("(IIL)", (unsigned int)(p->key >> 32),
                                       (unsigned int)p->key, (long long)count);
        if (!item || PyList_Append(out, item)) {
            Py_XDECREF(item);
            Py_DECREF(out);
            return NULL;
        }
        Py_DECREF(item);
        t->next_id++;
        t->merges++;
    }
    return out;
}

static PyObject *Trainer_sequence(Trainer *t, PyObject *Py_UNUSED(ignored)) {
    /* The live ids with their separators: all a resumed training needs (with the merges). */
    uint64_t live = 0;
    for (uint64_t i = 0; i < t->n; i++) live += t->node[i].tok != DEAD;
    PyObject *out = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(live * 4));
    if (!out) return NULL;
    uint32_t *dst = (uint32_t *)PyBytes_AS_STRING(out);
    for (uint64_t i = 0, k = 0; i < t->n; i++)
        if (t->node[i].tok != DEAD) dst[k++] = t->node[i].tok;
    return out;
}

static PyObject *Trainer_memory(Trainer *t, PyObject *Py_UNUSED(ignored)) {
    uint64_t bytes = t->n * sizeof(Node) + (t->weight ? t->n * 4 : 0) + t->cap_side * 8 + t->cap_pairs * sizeof(Pair) +
                     t->cap_count * 8 + t->table_cap * 4 +
                     t->heap_cap * sizeof(Entry) + t->cap_touched * 4;
    for (uint64_t i = 0; i < t->n_pairs; i++) bytes += (uint64_t)t->pairs[i].cap * 4;
    return PyLong_FromUnsignedLongLong(bytes);
}

static PyMethodDef Trainer_methods[] = {
    {"step", (PyCFunction)Trainer_step, METH_VARARGS,
     "step(n) -> [(left, right, count)]: up to n merges, fewer when no pair is left"},
    {"sequence", (PyCFunction)Trainer_sequence, METH_NOARGS,
     "the live ids as uint32 bytes, documents separated by 0xFFFFFFFF"},
    {"memory", (PyCFunction)Trainer_memory, METH_NOARGS, "bytes held by the trainer"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject TrainerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "prep.tokenizer._bpe.Trainer",
    .tp_basicsize = sizeof(Trainer),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Trainer(sequence, next_id, min_freq, weights=None): exact incremental BPE; "
              "weights: one uint32 per document, the times it counts",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Trainer_init,
    .tp_dealloc = (destructor)Trainer_dealloc,
    .tp_methods = Trainer_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_bpe",
                                    "prep's compiled BPE trainer", -1, NULL};

PyMODINIT_FUNC PyInit__bpe(void) {
    if (PyType_Ready(&TrainerType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&TrainerType);
    if (PyModule_AddObject(m, "Trainer", (PyObject *)&TrainerType) < 0) {
        Py_DECREF(&TrainerType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
