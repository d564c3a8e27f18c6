/* Verify's reading of a MongoDB connector's topic records (verify_event.c). */

#ifndef CDC_RAWJSON_VERIFY_EVENT_H
#define CDC_RAWJSON_VERIFY_EVENT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* verify_event(value) -> (op, after, source) | None: a Debezium change event's JSON value read as
   connectors/mongodb/verify_events.py `python_event` reads it: op (a str), after (a str or None), source (a dict of
   the source block's ts_ms, ord and snapshot, those it has). None when the Python path must read it. */
PyObject *verify_event(PyObject *module, PyObject *argument);

#endif
