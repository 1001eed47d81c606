/* prep.encoders._merges: a byte-level BPE encoder over a merge table, compiled.
 *
 * The same algorithm as prep/encoders/merges.py's apply_merges (its pure-Python twin) and as
 * Hugging Face tokenizers' BPE word merge: each document's bytes are one word; the adjacent
 * pairs that have a merge are taken by rank, the lowest first, the leftmost first among
 * equals (a bucket queue by rank, see encode_one, in the place of their heap); an entry whose
 * tokens have changed since it was queued is skipped (an overlap, as in "aaa"); merging
 * (a, b) at i into 256 + rank queues the pairs it forms with its neighbours. Merge k makes
 * id 256 + k; ids 0..255 are the bytes.
 *
 * Encoder(merges) takes the table as a buffer of native uint32, left and right of each merge
 * in turn. encode_batch(list of bytes) -> (ids, offsets): the ids of every document as
 * native uint32 bytes and n + 1 native int64 offsets, with the GIL released.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define DEAD 0xFFFFFFFFu
#define NONE 0xFFFFFFFFu

typedef struct {
    PyObject_HEAD
    uint32_t *left, *right; /* merge k: (left[k], right[k]) */
    uint32_t n_merges;
    uint64_t *keys; /* open addressing: pair key, its rank in vals; key 0 is (0, 0) */
    uint32_t *vals; /* rank + 1, 0 empty */
    uint64_t cap;
} Encoder;

static uint64_t mix(uint64_t x) {
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    x ^= x >> 33;
    return x;
}

#define KEY(a, b) (((uint64_t)(a) << 32) | (uint64_t)(b))

static uint32_t rank_of(const Encoder *e, uint32_t a, uint32_t b) {
    uint64_t key = KEY(a, b), mask = e->cap - 1, h = mix(key) & mask;
    while (e->vals[h]) {
        if (e->keys[h] == key) return e->vals[h] - 1;
        h = (h + 1) & mask;
    }
    return NONE;
}

static void Encoder_dealloc(Encoder *e) {
    free(e->left);
    free(e->right);
    free(e->keys);
    free(e->vals);
    Py_TYPE(e)->tp_free((PyObject *)e);
}

static int Encoder_init(Encoder *e, PyObject *args, PyObject *kw) {
    static char *names[] = {"merges", NULL};
    Py_buffer buf;
    if (!PyArg_ParseTupleAndKeywords(args, kw, "y*", names, &buf)) return -1;
    if (buf.len % 8 || e->left || (uint64_t)buf.len / 8 >= 0xFFFFFEFFull) {
        PyBuffer_Release(&buf);
        PyErr_SetString(PyExc_ValueError, "merges: a buffer of uint32 (left, right) pairs");
        return -1;
    }
    uint32_t n = (uint32_t)(buf.len / 8);
    const uint32_t *m = buf.buf;
    e->n_merges = n;
    e->cap = 16;
    while (e->cap < 2 * (uint64_t)n + 2) e->cap *= 2;
    e->left = malloc((n ? n : 1) * sizeof(uint32_t));
    e->right = malloc((n ? n : 1) * sizeof(uint32_t));
    e->keys = calloc(e->cap, sizeof(uint64_t));
    e->vals = calloc(e->cap, sizeof(uint32_t));
    if (!e->left || !e->right || !e->keys || !e->vals) {
        PyBuffer_Release(&buf);
        PyErr_NoMemory();
        return -1;
    }
    for (uint32_t k = 0; k < n; k++) {
        uint32_t a = m[2 * k], b = m[2 * k + 1];
        if (a >= 256 + k || b >= 256 + k) {
            PyBuffer_Release(&buf);
            PyErr_Format(PyExc_ValueError, "merge %u (%u, %u) names an id not defined before it",
                         k, a, b);
            return -1;
        }
        e->left[k] = a;
        e->right[k] = b;
        uint64_t key = KEY(a, b), mask = e->cap - 1, h = mix(key) & mask;
        while (e->vals[h] && e->keys[h] != key) h = (h + 1) & mask;
        if (!e->vals[h]) { /* a repeated pair keeps its first (lowest) rank */
            e->keys[h] = key;
            e->vals[h] = k + 1;
        }
    }
    PyBuffer_Release(&buf);
    return 0;
}

/* Scratch for one batch (one thread): sized by the longest document and the table. */
typedef struct {
    uint32_t *tok, *nxt, *prv; /* per position */
    uint32_t *pos, *link;      /* the pool of queued (position, next in its bucket) */
    uint32_t *sorted;          /* one bucket's positions */
    uint32_t *head, *tail;     /* per rank: its bucket's first and last pool entry */
    uint64_t *bits;            /* per rank: its bucket is not empty */
    uint64_t words;
} Scratch;

static void queue(Scratch *s, uint64_t *used, uint32_t r, uint32_t at) {
    uint32_t e = (uint32_t)(*used)++;
    s->pos[e] = at;
    s->link[e] = NONE;
    if (s->head[r] == NONE) {
        s->head[r] = e;
        s->bits[r >> 6] |= 1ull << (r & 63);
    } else {
        s->link[s->tail[r]] = e;
    }
    s->tail[r] = e;
}

static int ascending(const void *a, const void *b) {
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

/* The ids of data[0..n) into out; returns how many. A bucket queue by rank stands for the
 * heap of (rank, position): a merge of rank r only creates pairs holding id 256 + r, whose
 * ranks are above r, so the ranks come out in increasing order and each bucket is complete
 * when it is reached; its positions are then taken in increasing order (leftmost first). */
static uint64_t encode_one(const Encoder *e, const uint8_t *data, uint64_t n, uint32_t *out,
                           Scratch *s) {
    uint32_t *tok = s->tok, *nxt = s->nxt, *prv = s->prv;
    uint64_t used = 0;
    for (uint64_t i = 0; i < n; i++) {
        tok[i] = data[i];
        nxt[i] = (uint32_t)(i + 1);
        prv[i] = i ? (uint32_t)(i - 1) : NONE;
    }
    for (uint64_t i = 0; i + 1 < n; i++) {
        uint32_t r = rank_of(e, tok[i], tok[i + 1]);
        if (r != NONE) queue(s, &used, r, (uint32_t)i);
    }
    for (uint64_t w = 0; w < s->words;) {
        if (!s->bits[w]) {
            w++;
            continue;
        }
        uint32_t r = (uint32_t)(w * 64 + (uint64_t)__builtin_ctzll(s->bits[w]));
        s->bits[w] &= s->bits[w] - 1;
        uint64_t k = 0;
        int sorted = 1;
        for (uint32_t q = s->head[r]; q != NONE; q = s->link[q]) {
            if (k && s->pos[q] < s->sorted[k - 1]) sorted = 0;
            s->sorted[k++] = s->pos[q];
        }
        s->head[r] = NONE;
        if (!sorted) qsort(s->sorted, k, sizeof(uint32_t), ascending);
        uint32_t a = e->left[r], b = e->right[r];
        for (uint64_t q = 0; q < k; q++) {
            uint32_t i = s->sorted[q];
            if (tok[i] != a) continue;
            uint32_t j = nxt[i];
            if (j >= n || tok[j] != b) continue;
            tok[i] = 256 + r;
            tok[j] = DEAD;
            nxt[i] = nxt[j];
            if (nxt[i] < n) {
                prv[nxt[i]] = i;
                uint32_t x = rank_of(e, tok[i], tok[nxt[i]]);
                if (x != NONE) queue(s, &used, x, i);
            }
            if (prv[i] != NONE) {
                uint32_t x = rank_of(e, tok[prv[i]], tok[i]);
                if (x != NONE) queue(s, &used, x, prv[i]);
            }
        }
    }
    uint64_t m = 0;
    for (uint64_t i = 0; i < n; i = nxt[i]) out[m++] = tok[i];
    return m;
}

static void scratch_free(Scratch *s) {
    free(s->tok);
    free(s->nxt);
    free(s->prv);
    free(s->pos);
    free(s->link);
    free(s->sorted);
    free(s->head);
    free(s->tail);
    free(s->bits);
}

/* Every merge queues at most two entries and the start at most n - 1: 3n in all. */
static int scratch_alloc(Scratch *s, uint64_t longest, uint32_t n_merges) {
    uint64_t n = longest + 1, ranks = (uint64_t)n_merges + 1;
    s->words = (ranks + 63) / 64;
    s->tok = malloc(n * 4);
    s->nxt = malloc(n * 4);
    s->prv = malloc(n * 4);
    s->pos = malloc(3 * n * 4);
    s->link = malloc(3 * n * 4);
    s->sorted = malloc(3 * n * 4);
    s->head = malloc(ranks * 4);
    s->tail = malloc(ranks * 4);
    s->bits = calloc(s->words, 8);
    if (!s->tok || !s->nxt || !s->prv || !s->pos || !s->link || !s->sorted || !s->head ||
        !s->tail || !s->bits)
        return -1;
    memset(s->head, 0xFF, ranks * 4);
    return 0;
}

static PyObject *Encoder_encode_batch(Encoder *e, PyObject *arg) {
    if (!e->left) {
        PyErr_SetString(PyExc_ValueError, "Encoder not initialised");
        return NULL;
    }
    PyObject *seq = PySequence_Fast(arg, "encode_batch: a list of bytes");
    if (!seq) return NULL;
    Py_ssize_t docs = PySequence_Fast_GET_SIZE(seq);
    PyObject **items = PySequence_Fast_ITEMS(seq);
    uint64_t total = 0, longest = 0;
    for (Py_ssize_t d = 0; d < docs; d++) {
        if (!PyBytes_Check(items[d])) {
            Py_DECREF(seq);
            PyErr_SetString(PyExc_TypeError, "encode_batch: a list of bytes");
            return NULL;
        }
        uint64_t n = (uint64_t)PyBytes_GET_SIZE(items[d]);
        total += n;
        if (n > longest) longest = n;
    }
    if (longest >= 0xFFFFFFFFull) {
        Py_DECREF(seq);
        PyErr_SetString(PyExc_ValueError, "a document of 4 GiB or more");
        return NULL;
    }
    PyObject *ids = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(total * 4));
    PyObject *offs = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)((docs + 1) * 8));
    Scratch s = {0};
    if (!ids || !offs || scratch_alloc(&s, longest, e->n_merges)) {
        Py_XDECREF(ids);
        Py_XDECREF(offs);
        scratch_free(&s);
        Py_DECREF(seq);
        return PyErr_NoMemory();
    }
    uint32_t *out = (uint32_t *)PyBytes_AS_STRING(ids);
    int64_t *off = (int64_t *)PyBytes_AS_STRING(offs);
    uint64_t at = 0;
    Py_BEGIN_ALLOW_THREADS off[0] = 0;
    for (Py_ssize_t d = 0; d < docs; d++) {
        const uint8_t *data = (const uint8_t *)PyBytes_AS_STRING(items[d]);
        at += encode_one(e, data, (uint64_t)PyBytes_GET_SIZE(items[d]), out + at, &s);
        off[d + 1] = (int64_t)at;
    }
    Py_END_ALLOW_THREADS scratch_free(&s);
    Py_DECREF(seq);
    if (_PyBytes_Resize(&ids, (Py_ssize_t)(at * 4))) {
        Py_DECREF(offs);
        return NULL;
    }
    PyObject *result = PyTuple_Pack(2, ids, offs);
    Py_DECREF(ids);
    Py_DECREF(offs);
    return result;
}

static PyMethodDef Encoder_methods[] = {
    {"encode_batch", (PyCFunction)Encoder_encode_batch, METH_O,
     "encode_batch(list of bytes) -> (ids as uint32 bytes, n + 1 int64 offsets as bytes)"},
    {NULL, NULL, 0, NULL}};

static PyTypeObject EncoderType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "prep.encoders._merges.Encoder",
    .tp_basicsize = sizeof(Encoder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Encoder(merges): byte-level BPE by merge rank, as tokenizers' BPE",
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)Encoder_init,
    .tp_dealloc = (destructor)Encoder_dealloc,
    .tp_methods = Encoder_methods,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_merges",
                                    "prep's compiled BPE encoder", -1, NULL};

PyMODINIT_FUNC PyInit__merges(void) {
    if (PyType_Ready(&EncoderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (!m) return NULL;
    Py_INCREF(&EncoderType);
    if (PyModule_AddObject(m, "Encoder", (PyObject *)&EncoderType) < 0) {
        Py_DECREF(&EncoderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
