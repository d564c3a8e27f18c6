/* The compiled module _rawjson (connectors/mongodb/rawjson.py): raw BSON documents and change events to Debezium's
   JSON text. writer.c writes documents, change_event.c reads change events and writes their values. */

#include "change_event.h"
#include "verify_event.h"
#include "writer.h"

static PyObject *document_json(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "document_json(data, bare_non_finite) takes 2 arguments");
        return NULL;
    }
    if (!writer_ready()) {
        PyErr_SetString(PyExc_RuntimeError, "set_escape_table() was not called");
        return NULL;
    }
    int bare = PyObject_IsTrue(args[1]);
    if (bare < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *data = view.buf;
    size_t length = (size_t)view.len;
    PyObject *result = NULL;
    Buffer out = {NULL, 0, 0};
    Outcome outcome = UNSUPPORTED;
    if (is_document(data, length)) {
        /* The text is about as long as the BSON: one allocation mostly suffices. */
        outcome = grow(&out, length + length / 2 + 64) < 0 ? NO_MEMORY : put_document(&out, data, length, bare);
    }
    PyBuffer_Release(&view);
    if (outcome == WRITTEN) {
        result = PyUnicode_DecodeUTF8(out.data, out.length, "strict");
    } else if (outcome == NO_MEMORY) {
        PyErr_NoMemory();
    } else {
        result = Py_NewRef(Py_None);
    }
    PyMem_RawFree(out.data);
    return result;
}

static PyObject *set_escape_table(PyObject *module, PyObject *bits) {
    Py_buffer view;
    if (PyObject_GetBuffer(bits, &view, PyBUF_SIMPLE) < 0) return NULL;
    int failed = set_escape_bits(view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    if (failed) {
        PyErr_SetString(PyExc_ValueError, "the escape table must be 8192 bytes");
        return NULL;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"document_json", (PyCFunction)(void (*)(void))document_json, METH_FASTCALL,
     "document_json(data, bare_non_finite) -> str | None: a raw BSON document as strict Extended JSON; None when "
     "the Python writer must do it."},
    {"id_document", id_document, METH_O,
     "id_document(data) -> bytes | None: a BSON document of the _id element of the document data alone."},
    {"split_event", split_event, METH_O,
     "split_event(data) -> (rest, full_document, full_document_before_change) | None: a change event's BSON without "
     "its two full documents, and those as BSON bytes."},
    {"event_head", event_head, METH_O,
     "event_head(data) -> (operationType, db, coll, _id BSON, (time, increment), updateDescription BSON) | None: "
     "what places a change event, read from its raw BSON."},
    {"change_value", (PyCFunction)(void (*)(void))change_value, METH_FASTCALL,
     "change_value(data, source_prefix, bare_non_finite, ts_ms, update_description, rs) -> (value, key) | None: "
     "Debezium's change event value (and key) of a raw change event (2.x's source block with rs); None when the "
     "Python path must write it."},
    {"snapshot_value", (PyCFunction)(void (*)(void))snapshot_value, METH_FASTCALL,
     "snapshot_value(data, source_prefix, bare_non_finite, ts_ms, snapshot, db, coll) -> (value, key) | None: "
     "Debezium's snapshot read event value (and key) of a raw document; None when the Python path must write it."},
    {"verify_rows", (PyCFunction)(void (*)(void))verify_rows, METH_FASTCALL,
     "verify_rows(batch, bare_non_finite) -> list | None: per document of a raw batch, (key as canonical JSON, "
     "document text), or the document's bytes when the Python path must write it."},
    {"verify_event", (PyCFunction)(void (*)(void))verify_event, METH_FASTCALL,
     "verify_event(value, event_class) -> event_class(op, after, source) | None: a change event's op, after text and "
     "source ts_ms, ord and snapshot, read from its JSON value; None when the Python path must read it."},
    {"verify_key", verify_key, METH_O,
     "verify_key(key) -> str | None: a record key as canonical JSON when it already is one; None when the Python "
     "path must read it."},
    {"reply_events", (PyCFunction)(void (*)(void))reply_events, METH_FASTCALL,
     "reply_events(reply, event_class) -> (events, cursor) | None: a change stream reply's events, each an "
     "event_class holding its bytes (raw) and event_head (head), and its cursor document without the batch as BSON."},
    {"change_messages", (PyCFunction)(void (*)(void))change_messages, METH_FASTCALL,
     "change_messages(events, start, writing, messages) -> (index, counts, first, last): the Kafka messages of "
     "events[start:] appended while this module writes them whole; index is where it stopped."},
    {"update_description", update_description, METH_O,
     "update_description(data) -> bytes | None: the updateDescription block of an update event's updateDescription "
     "document; None when the Python path must write it."},
    {"set_escape_table", set_escape_table, METH_O,
     "set_escape_table(bits): the BMP code points to write as \\uXXXX, one bit each (8192 bytes)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module_definition = {
    PyModuleDef_HEAD_INIT, "_rawjson", "Raw BSON to Debezium's strict Extended JSON.", -1, methods,
};

PyMODINIT_FUNC PyInit__rawjson(void) {
    return PyModule_Create(&module_definition);
}