/* Verify's reading of a MongoDB connector's topic records (verify_event.c). */

#ifndef CDC_RAWJSON_VERIFY_EVENT_H
#define CDC_RAWJSON_VERIFY_EVENT_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* verify_event(value, event_class) -> event_class(op, after, source) | None: a Debezium change event's JSON value
   read as connectors/mongodb/verify_events.py `python_event` reads it: op (a str), after (a str, or None: none, or a
   delete), source (a dict of the source block's ts_ms, ord and snapshot, those it has), in an instance of the tuple
   subclass event_class (verify_events.Event). None when the Python path must read it. */
PyObject *verify_event(PyObject *module, PyObject *const *args, Py_ssize_t nargs);

/* verify_key(key) -> str | None: a record key `{"id":"…"}` (bytes) as canonical JSON (verify_events.key_text) when
   the key already is (its id's text printable ASCII, escaping only `"` and `\`); None when key_text must read it. */
PyObject *verify_key(PyObject *module, PyObject *argument);

#endif
