/* The functions of the compiled module that read change stream events (change_event.c). */

#ifndef CDC_RAWJSON_CHANGE_EVENT_H
#define CDC_RAWJSON_CHANGE_EVENT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

PyObject *id_document(PyObject *module, PyObject *argument);
PyObject *split_event(PyObject *module, PyObject *argument);
PyObject *event_head(PyObject *module, PyObject *argument);
PyObject *change_value(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *reply_events(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *change_messages(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *update_description(PyObject *module, PyObject *argument);
PyObject *snapshot_value(PyObject *module, PyObject *const *args, Py_ssize_t nargs);
PyObject *verify_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

#endif
