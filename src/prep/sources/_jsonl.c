/* prep.sources._jsonl: the JSON Lines fast path, compiled (see prep/sources/jsonl_fast.py).
 *
 * texts(block, rows, text_key, split_key) -> (texts, splits) or None. block: any bytes-like
 * object holding whole lines joined by "\n" (no newline after the last one); rows: how many.
 * texts is the list of each line's text field, splits the list of its split field (None when
 * split_key is None): exactly what prep.sources.jsonl.LineParser gives every line. None
 * whenever that is not certain; the caller then parses the block line by line, whose result
 * or refusal is the definition. So a line is taken only when it is one JSON object (RFC 8259,
 * which Python's json reads alike) in valid UTF-8 (strict, as Python decodes a line: no
 * overlong form, no encoded surrogate, nothing above U+10FFFF), no top-level key of it
 * written with a backslash, and the text key (and the split key) among them holding a
 * string without a lone surrogate escape; a duplicate key is read as Python reads it, the
 * last one winning. Anything else is None for the block: a blank line, a BOM, NaN or
 * Infinity, a dotted key, an integer of more digits than any int_max_str_digits setting lets
 * Python read (so that no setting can make Python refuse what is taken here), a line count
 * other than rows. Other values are checked (nested to any depth: an explicit stack, no
 * recursion) but never converted.
 *
 * The block is read once, with the GIL released, recording where each text lies; the str
 * objects are built after, each of its widest character's kind (as Python's own str is), its
 * length counted by the scan. Strings are scanned 16 bytes at a time with SSE2 on x86-64,
 * eight in a 64-bit word elsewhere: only a quote, a backslash, a control byte or a
 * non-ASCII byte stops the scan (and only a backslash or a non-ASCII byte the copy).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__) && defined(__GNUC__) && !defined(PREP_JSONL_SCALAR)
#include <emmintrin.h>
#define USE_SSE2 1
#endif
/* Elsewhere, eight bytes at a time in a word: whether any is zero, as a top bit (exact for
 * the first such byte, the lowest where FIRST can find it, else FIRST is 0). */
#define ONES 0x0101010101010101ull
#define HIGHS 0x8080808080808080ull
#define ZERO_IN(x) (((x) - ONES) & ~(x))
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define FIRST(m) (__builtin_ctzll(m) / 8)
#else
#define FIRST(m) 0
#endif

/* A string's flags: what it holds. Its widest character sets the kind of its str. */
#define ESC 1u   /* a backslash escape */
#define LONE 2u  /* a lone surrogate escape */
#define WIDE1 4u /* a character U+0080..U+00FF */
#define WIDE2 8u /* U+0100..U+FFFF */
#define WIDE4 16u /* above U+FFFF */
#define INT_LIMIT 600 /* below Python's least int_max_str_digits (640) */

typedef struct {
    const uint8_t *s; /* the body, between the quotes; NULL: missing, or not a string */
    Py_ssize_t n, chars; /* its bytes, its characters once decoded */
    unsigned flags;
} Str;

typedef struct {
    Str text, split;
} Row;

typedef struct {
    uint8_t *v;
    size_t n, cap;
} Stack;

typedef struct {
    const uint8_t *text, *split; /* split NULL: no split key */
    size_t text_n, split_n;
} Keys;

static const uint8_t *ws(const uint8_t *p, const uint8_t *e) {
    while (p < e && (*p == ' ' || *p == '\t' || *p == '\r')) p++; /* "\n" ends the line */
    return p;
}

static int hex(uint8_t c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* The code point of the four hex digits at p (4 bytes there), or -1. */
static long hex4(const uint8_t *p) {
    long v = 0;
    for (int i = 0; i < 4; i++) {
        int d = hex(p[i]);
        if (d < 0) return -1;
        v = v * 16 + d;
    }
    return v;
}

/* The length of the valid UTF-8 sequence of two or more bytes at p, or 0. */
static int utf8_len(const uint8_t *p, const uint8_t *e) {
    uint8_t c = p[0];
    Py_ssize_t left = e - p;
#define CONT(i) ((p[i] & 0xC0) == 0x80)
    if (c >= 0xC2 && c <= 0xDF) return left >= 2 && CONT(1) ? 2 : 0;
    if (c >= 0xE0 && c <= 0xEF) {
        if (left < 3 || !CONT(1) || !CONT(2)) return 0;
        if (c == 0xE0 && p[1] < 0xA0) return 0; /* overlong */
        if (c == 0xED && p[1] > 0x9F) return 0; /* a surrogate */
        return 3;
    }
    if (c >= 0xF0 && c <= 0xF4) {
        if (left < 4 || !CONT(1) || !CONT(2) || !CONT(3)) return 0;
        if (c == 0xF0 && p[1] < 0x90) return 0; /* overlong */
        if (c == 0xF4 && p[1] > 0x8F) return 0; /* above U+10FFFF */
        return 4;
    }
#undef CONT
    return 0;
}

/* The end of the string whose body starts at p (past its closing quote), or NULL when it is
 * not a valid JSON string in valid UTF-8 before e (a "\n" is a control byte: it ends no
 * string). Fills *out. */
static const uint8_t *scan_string(const uint8_t *p, const uint8_t *e, Str *out) {
    unsigned f = 0;
    Py_ssize_t shrink = 0; /* bytes beyond the first of each character */
    out->s = p;
#ifdef USE_SSE2
    const __m128i quote = _mm_set1_epi8('"'), slash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
#endif
    for (;;) {
#ifdef USE_SSE2
        while (e - p >= 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)p);
            /* signed: a byte >= 0x80 is below 0x20 too */
            __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(v, quote),
                                                  _mm_cmpeq_epi8(v, slash)),
                                     _mm_cmplt_epi8(v, space));
            int bits = _mm_movemask_epi8(m);
            if (bits) {
                p += __builtin_ctz((unsigned)bits);
                break;
            }
            p += 16;
        }
#else
        for (uint64_t x, m; e - p >= 8; p += 8) { /* < 0x20, > 0x7F, a quote, a backslash */
            memcpy(&x, p, 8);
            m = (((x - ONES * 0x20) & ~x) | x | ZERO_IN(x ^ (ONES * '"')) |
                 ZERO_IN(x ^ (ONES * '\\'))) & HIGHS;
            if (m) {
                p += FIRST(m);
                break;
            }
        }
#endif
        if (p >= e) return NULL;
        uint8_t c = *p;
        if (c == '"') {
            out->n = p - out->s;
            out->chars = out->n - shrink;
            out->flags = f;
            return p + 1;
        }
        if (c == '\\') {
            f |= ESC;
            if (e - p < 2) return NULL;
            c = p[1];
            if (c == 'u') {
                long cp = e - p < 6 ? -1 : hex4(p + 2), lo;
                if (cp < 0) return NULL;
                p += 6;
                shrink += 5;
                if (cp >= 0xD800 && cp <= 0xDBFF && e - p >= 6 && p[0] == '\\' &&
                    p[1] == 'u' && (lo = hex4(p + 2)) >= 0xDC00 && lo <= 0xDFFF) {
                    p += 6; /* a pair: one character, as Python joins it */
                    shrink += 6;
                    f |= WIDE4;
                } else {
                    f |= cp >= 0xD800 && cp <= 0xDFFF ? LONE | WIDE2
                         : cp >= 0x100 ? WIDE2 : cp >= 0x80 ? WIDE1 : 0;
                }
            } else if (c == '"' || c == '\\' || c == '/' || c == 'b' || c == 'f' ||
                       c == 'n' || c == 'r' || c == 't') {
                p += 2;
                shrink += 1;
            } else {
                return NULL;
            }
        } else if (c < 0x20) {
            return NULL;
        } else if (c < 0x80) {
            p++;
        } else {
            int n = utf8_len(p, e);
            if (!n) return NULL;
            f |= c >= 0xF0 ? WIDE4 : c >= 0xC4 ? WIDE2 : WIDE1;
            p += n;
            shrink += n - 1;
        }
    }
}

static int push(Stack *st, uint8_t c) {
    if (st->n == st->cap) {
        size_t cap = st->cap ? 2 * st->cap : 256;
        uint8_t *v = realloc(st->v, cap);
        if (!v) return 0;
        st->v = v;
        st->cap = cap;
    }
    st->v[st->n++] = c;
    return 1;
}

static void set(Row *r, int target, const Str *s) {
    if (target & 1) r->text = *s;
    if (target & 2) r->split = *s;
}

/* Reads the line at p (up to the next "\n" or e) into *r. Returns its end (the "\n" or e),
 * NULL when not sure; sets *oom when out of memory. */
static const uint8_t *parse_line(const uint8_t *p, const uint8_t *e, const Keys *k, Stack *st,
                                 Row *r, int *oom) {
    const uint8_t *q;
    Str str;
    int target = 0, tg;
    r->text.s = r->split.s = NULL;
    st->n = 0;
    p = ws(p, e);
    if (p == e || *p != '{') return NULL;
    goto open;
key:
    p = ws(p, e);
    if (p == e || *p != '"') return NULL;
    q = p + 1;
    if (!(p = scan_string(q, e, &str))) return NULL;
    if (st->n == 1) { /* a top-level key */
        size_t n = (size_t)str.n;
        if (str.flags & ESC) return NULL;
        target = (n == k->text_n && !memcmp(q, k->text, n)) |
                 (k->split && n == k->split_n && !memcmp(q, k->split, n)) << 1;
    }
    p = ws(p, e);
    if (p == e || *p != ':') return NULL;
    p++;
value:
    p = ws(p, e);
    if (p == e) return NULL;
    tg = target;
    target = 0;
    if (*p == '"') {
        if (!(p = scan_string(p + 1, e, &str))) return NULL;
        set(r, tg, &str);
        goto after;
    }
    str.s = NULL;
    set(r, tg, &str);
    switch (*p) {
    case '{':
    case '[':
    open:
        if (!push(st, *p)) goto nomem;
        p = ws(p + 1, e);
        if (p < e && *p == (st->v[st->n - 1] == '{' ? '}' : ']')) {
            st->n--;
            p++;
            goto after;
        }
        if (st->v[st->n - 1] == '{') goto key;
        goto value;
    case 't':
        if (e - p < 4 || memcmp(p, "true", 4)) return NULL;
        p += 4;
        goto after;
    case 'f':
        if (e - p < 5 || memcmp(p, "false", 5)) return NULL;
        p += 5;
        goto after;
    case 'n':
        if (e - p < 4 || memcmp(p, "null", 4)) return NULL;
        p += 4;
        goto after;
    default: {
        int whole = 1;
        q = p;
        if (*p == '-') p++;
        if (p == e) return NULL;
        if (*p == '0') {
            p++;
        } else if (*p >= '1' && *p <= '9') {
            while (p < e && *p >= '0' && *p <= '9') p++;
        } else {
            return NULL; /* NaN, Infinity and anything else */
        }
        if (p < e && *p == '.') {
            whole = 0;
            if (++p == e || *p < '0' || *p > '9') return NULL;
            while (p < e && *p >= '0' && *p <= '9') p++;
        }
        if (p < e && (*p == 'e' || *p == 'E')) {
            whole = 0;
            if (++p < e && (*p == '+' || *p == '-')) p++;
            if (p == e || *p < '0' || *p > '9') return NULL;
            while (p < e && *p >= '0' && *p <= '9') p++;
        }
        if (whole && p - q > INT_LIMIT) return NULL;
        goto after;
    }
    }
after:
    p = ws(p, e);
    if (st->n == 0) return p == e || *p == '\n' ? p : NULL;
    if (p == e) return NULL;
    if (*p == ',') {
        p++;
        if (st->v[st->n - 1] == '{') goto key;
        goto value;
    }
    if (*p != (st->v[st->n - 1] == '{' ? '}' : ']')) return NULL;
    st->n--;
    p++;
    goto after;
nomem:
    *oom = 1;
    return NULL;
}

/* Fills rows[0..lines) from the block; returns 1, or 0 when not sure (or *oom). */
static int scan_block(const uint8_t *p, const uint8_t *end, Py_ssize_t rows, const Keys *k,
                      Row *out, int *oom) {
    Stack st = {NULL, 0, 0};
    Py_ssize_t line = 0;
    int ok = 1;
    while (p < end) {
        const uint8_t *eol;
        if (line == rows || !(eol = parse_line(p, end, k, &st, &out[line], oom)) ||
            !out[line].text.s || out[line].text.flags & LONE ||
            (k->split && (!out[line].split.s || out[line].split.flags & LONE))) {
            ok = 0;
            break;
        }
        line++;
        if (eol == end) break;
        p = eol + 1; /* a line follows a "\n", empty if the block ends there */
        if (p == end) {
            ok = 0;
            break;
        }
    }
    free(st.v);
    return ok && line == rows;
}

/* One character of the escape at p (past its backslash) or of the UTF-8 sequence at p, as
 * scan_string has checked them; *p moves past it. */
static inline Py_UCS4 next_char(const uint8_t **pp) {
    const uint8_t *p = *pp;
    Py_UCS4 c = *p;
    if (c == '\\') {
        c = p[1];
        *pp = p + 2;
        switch (c) {
        case 'b': return '\b';
        case 'f': return '\f';
        case 'n': return '\n';
        case 'r': return '\r';
        case 't': return '\t';
        case 'u': break;
        default: return c; /* " \ / */
        }
        c = (Py_UCS4)hex4(p + 2);
        *pp = p + 6;
        if (c >= 0xD800 && c <= 0xDBFF) { /* the pair scan_string found */
            c = 0x10000 + ((c - 0xD800) << 10) + ((Py_UCS4)hex4(p + 8) - 0xDC00);
            *pp = p + 12;
        }
        return c;
    }
    if (c < 0x80) {
        *pp = p + 1;
        return c;
    }
    if (c < 0xE0) {
        *pp = p + 2;
        return (c & 0x1F) << 6 | (p[1] & 0x3F);
    }
    if (c < 0xF0) {
        *pp = p + 3;
        return (c & 0x0F) << 12 | (Py_UCS4)(p[1] & 0x3F) << 6 | (p[2] & 0x3F);
    }
    *pp = p + 4;
    return (c & 0x07) << 18 | (Py_UCS4)(p[1] & 0x3F) << 12 | (Py_UCS4)(p[2] & 0x3F) << 6 |
           (p[3] & 0x3F);
}

/* Writes the characters of p..e to the str u, of type T: sixteen bytes at a time where SSE2
 * is (WIDEN: store them as T), keeping those before the first that is no plain ASCII (the
 * rest is written over; never past the str's end), else one by one. */
#ifdef USE_SSE2
#define FILL(T, WIDEN)                                                                   \
    do {                                                                                 \
        T *o = (T *)PyUnicode_DATA(u), *end = o + f->chars;                              \
        const __m128i slash = _mm_set1_epi8('\\'), zero = _mm_setzero_si128();           \
        while (p < e) {                                                                  \
            if (e - p >= 16 && end - o >= 16) {                                          \
                __m128i v = _mm_loadu_si128((const __m128i *)p);                         \
                int bits = _mm_movemask_epi8(_mm_or_si128(_mm_cmpeq_epi8(v, slash), v)); \
                int n = bits ? __builtin_ctz((unsigned)bits) : 16;                       \
                WIDEN;                                                                   \
                o += n;                                                                  \
                p += n;                                                                  \
                if (n == 16) continue;                                                   \
            }                                                                            \
            *o++ = (T)next_char(&p);                                                     \
        }                                                                                \
        (void)zero;                                                                      \
    } while (0)
#define WIDEN1 _mm_storeu_si128((__m128i *)o, v)
#define WIDEN2                                                                           \
    _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi8(v, zero));                          \
    _mm_storeu_si128((__m128i *)(o + 8), _mm_unpackhi_epi8(v, zero))
#define WIDEN4                                                                           \
    __m128i lo = _mm_unpacklo_epi8(v, zero), hi = _mm_unpackhi_epi8(v, zero);            \
    _mm_storeu_si128((__m128i *)o, _mm_unpacklo_epi16(lo, zero));                        \
    _mm_storeu_si128((__m128i *)(o + 4), _mm_unpackhi_epi16(lo, zero));                  \
    _mm_storeu_si128((__m128i *)(o + 8), _mm_unpacklo_epi16(hi, zero));                  \
    _mm_storeu_si128((__m128i *)(o + 12), _mm_unpackhi_epi16(hi, zero))
#else
#define FILL(T, WIDEN)                                                                   \
    do {                                                                                 \
        T *o = (T *)PyUnicode_DATA(u), *end = o + f->chars;                              \
        while (p < e) {                                                                  \
            uint64_t x, m;                                                               \
            if (e - p >= 8 && end - o >= 8) {                                            \
                memcpy(&x, p, 8);                                                        \
                m = (x | ZERO_IN(x ^ (ONES * '\\'))) & HIGHS;                              \
                int n = m ? FIRST(m) : 8;                                                \
                for (int i = 0; i < n; i++) o[i] = p[i];                                 \
                o += n;                                                                  \
                p += n;                                                                  \
                if (n == 8) continue;                                                    \
            }                                                                            \
            *o++ = (T)next_char(&p);                                                     \
        }                                                                                \
    } while (0)
#endif

/* The str of a scanned field (no lone surrogate), written into a str of its widest
 * character's kind, as Python's own str of it is. */
static PyObject *make_str(const Str *f) {
    Py_UCS4 max = f->flags & WIDE4 ? 0x10FFFF : f->flags & WIDE2 ? 0xFFFF
                  : f->flags & WIDE1 ? 0xFF : 0x7F;
    PyObject *u = PyUnicode_New(f->chars, max);
    const uint8_t *p = f->s, *e = f->s + f->n;
    if (!u) return NULL;
    if (max == 0x7F && !(f->flags & ESC)) memcpy(PyUnicode_DATA(u), p, (size_t)f->n);
    else if (max <= 0xFF) FILL(Py_UCS1, WIDEN1);
    else if (max == 0xFFFF) FILL(Py_UCS2, WIDEN2);
    else FILL(Py_UCS4, WIDEN4);
    return u;
}

/* The list of one field of every row, or NULL (an exception). */
static PyObject *build(const Row *rows, Py_ssize_t n, int split) {
    PyObject *list = PyList_New(n);
    for (Py_ssize_t i = 0; list && i < n; i++) {
        PyObject *u = make_str(split ? &rows[i].split : &rows[i].text);
        if (!u) Py_CLEAR(list);
        else PyList_SET_ITEM(list, i, u);
    }
    return list;
}

static const uint8_t *utf8_key(PyObject *key, size_t *n) {
    Py_ssize_t len;
    const char *s = PyUnicode_AsUTF8AndSize(key, &len);
    if (!s) { /* a key no line can hold as UTF-8 (a surrogate): not sure */
        PyErr_Clear();
        return NULL;
    }
    *n = (size_t)len;
    return strchr(s, '.') || (size_t)len != strlen(s) ? NULL : (const uint8_t *)s;
}

static PyObject *texts(PyObject *self, PyObject *args) {
    Py_buffer buf;
    Py_ssize_t rows;
    PyObject *text_key, *split_key, *result = NULL, *text_list = NULL, *split_list = NULL;
    Keys k = {NULL, NULL, 0, 0};
    Row *out = NULL;
    int ok = 0, oom = 0;
    (void)self;
    if (!PyArg_ParseTuple(args, "y*nUO", &buf, &rows, &text_key, &split_key)) return NULL;
    if (split_key != Py_None && !PyUnicode_Check(split_key)) {
        PyErr_SetString(PyExc_TypeError, "split_key: a str or None");
        goto done;
    }
    k.text = utf8_key(text_key, &k.text_n);
    if (split_key != Py_None) {
        k.split = utf8_key(split_key, &k.split_n);
        if (!k.split || !k.split_n) goto none;
    }
    if (!k.text || rows < 0 || rows > buf.len + 1) goto none;
    out = malloc(((size_t)rows + 1) * sizeof(Row));
    if (!out) {
        PyErr_NoMemory();
        goto done;
    }
    Py_BEGIN_ALLOW_THREADS
    const uint8_t *p = buf.buf;
    ok = scan_block(p, p + buf.len, rows, &k, out, &oom);
    Py_END_ALLOW_THREADS
    if (oom) {
        PyErr_NoMemory();
        goto done;
    }
    if (!ok) goto none;
    if (!(text_list = build(out, rows, 0)) || (k.split && !(split_list = build(out, rows, 1))))
        goto done;
    result = PyTuple_Pack(2, text_list, k.split ? split_list : Py_None);
    goto done;
none:
    Py_INCREF(Py_None);
    result = Py_None;
done:
    Py_XDECREF(text_list);
    Py_XDECREF(split_list);
    free(out);
    PyBuffer_Release(&buf);
    return result;
}

static PyMethodDef methods[] = {
    {"texts", texts, METH_VARARGS,
     "texts(block, rows, text_key, split_key) -> (texts, splits) or None: the text (and "
     "split) field of every line of a block of whole JSON Lines, exactly as Python's json "
     "reads them; None when not sure."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_jsonl", NULL, -1, methods};

PyMODINIT_FUNC PyInit__jsonl(void) { return PyModule_Create(&module); }
