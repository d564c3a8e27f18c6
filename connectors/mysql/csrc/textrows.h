/* The rows of a SELECT's text-protocol result set, read from the connection's socket (textrows.c). */

#ifndef CDC_TEXTROWS_H
#define CDC_TEXTROWS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* Once, before text_rows: the datetime C API and decimal.Decimal (a reference the caller keeps). */
int text_rows_init(PyObject *decimal_type);
PyObject *text_rows(PyObject *self, PyObject *const *args, Py_ssize_t nargs);

#endif
