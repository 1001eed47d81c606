/* The prefix digest's chain over many rows at once: c = SHA-256(c || d) for each 32-byte
 * row digest d in turn (prep.stream.order.Cursor). In Python each link costs about a microsecond
 * of interpreter work around a 64-byte hash; here it is the hash alone, with the GIL
 * released, through OpenSSL's EVP interface (what hashlib uses) with the algorithm fetched
 * once: the one-shot SHA256() looks it up again at every call, which costs more than the
 * hash of 64 bytes. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <string.h>
#include <openssl/evp.h>

static EVP_MD *sha256 = NULL; /* fetched once, when the module is loaded */

static PyObject *
chain(PyObject *module, PyObject *args)
{
    Py_buffer start, digests;
    unsigned char link[64], out[EVP_MAX_MD_SIZE];
    unsigned int size = 0;
    int ok = 1;

    if (!PyArg_ParseTuple(args, "y*y*", &start, &digests))
        return NULL;
    if (start.len != 32 || digests.len % 32 != 0) {
        PyBuffer_Release(&start);
        PyBuffer_Release(&digests);
        PyErr_SetString(PyExc_ValueError,
                        "chain(start, digests): start is 32 bytes, digests a multiple of 32");
        return NULL;
    }
    EVP_MD_CTX *ctx = EVP_MD_CTX_new();
    if (ctx == NULL) {
        PyBuffer_Release(&start);
        PyBuffer_Release(&digests);
        return PyErr_NoMemory();
    }
    memcpy(link, start.buf, 32);
    const unsigned char *d = digests.buf;
    Py_ssize_t n = digests.len / 32;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; ok && i < n; i++) {
        memcpy(link + 32, d + 32 * i, 32);
        ok = EVP_DigestInit_ex(ctx, sha256, NULL) && EVP_DigestUpdate(ctx, link, 64)
             && EVP_DigestFinal_ex(ctx, out, &size) && size == 32;
        memcpy(link, out, 32);
    }
    Py_END_ALLOW_THREADS
    EVP_MD_CTX_free(ctx);
    PyBuffer_Release(&start);
    PyBuffer_Release(&digests);
    if (!ok) {
        PyErr_SetString(PyExc_RuntimeError, "OpenSSL's SHA-256 failed");
        return NULL;
    }
    return PyBytes_FromStringAndSize((const char *)link, 32);
}

static PyMethodDef methods[] = {
    {"chain", chain, METH_VARARGS,
     "chain(start, digests) -> the 32-byte link after chaining each 32-byte digest in turn"},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_chain", NULL, -1, methods};

PyMODINIT_FUNC
PyInit__chain(void)
{
    sha256 = EVP_MD_fetch(NULL, "SHA256", NULL);
    if (sha256 == NULL) {
        PyErr_SetString(PyExc_ImportError, "OpenSSL has no SHA-256");
        return NULL;
    }
    return PyModule_Create(&module);
}
