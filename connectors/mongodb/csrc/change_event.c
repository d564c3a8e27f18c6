/* Change stream events read from their raw BSON: the parts the pipeline needs to place an event (event_head), the
   event split from its full documents (split_event, id_document), and Debezium's change event value written whole
   (change_value), the same bytes as connectors/mongodb/envelopes.py `debezium_value` encoded by events.py. */

#include "change_event.h"

#include <string.h>

#include "plain_bytes.h"

#include "writer.h"

/* One element of a document: its BSON type and where its value lies (type 0: absent). */
typedef struct {
    unsigned char type;
    const unsigned char *value;
    size_t size;
} Element;

/* The fields of a change event this module reads. */
typedef struct {
    Element id, operation_type, cluster_time, wall_time, ns, document_key, full_document, before, update_description,
        lsid, txn_number;
} EventFields;

/* A field a document's reader takes by name: where its Element goes in the reader's struct. */
typedef struct {
    const char *name;
    size_t length; /* compared first: most names differ in length */
    size_t offset;
} NamedField;

#define NAMED_FIELD(type, name, member) {name, sizeof name - 1, offsetof(type, member)}
#define EVENT_FIELD(name, member) NAMED_FIELD(EventFields, name, member)
#define FIELD_COUNT(table) (sizeof table / sizeof table[0])

static const NamedField EVENT_FIELDS[] = {
    EVENT_FIELD("_id", id),
    EVENT_FIELD("operationType", operation_type),
    EVENT_FIELD("clusterTime", cluster_time),
    EVENT_FIELD("wallTime", wall_time),
    EVENT_FIELD("ns", ns),
    EVENT_FIELD("documentKey", document_key),
    EVENT_FIELD("fullDocument", full_document),
    EVENT_FIELD("fullDocumentBeforeChange", before),
    EVENT_FIELD("updateDescription", update_description),
    EVENT_FIELD("lsid", lsid),
    EVENT_FIELD("txnNumber", txn_number),
};

/* Calls `found` for each element of the document data[0..length); -1 when it is malformed, else 0. */
typedef int (*OnElement)(void *state, const unsigned char *name, size_t name_length, const Element *element);

static int each_element(const unsigned char *data, size_t length, OnElement found, void *state) {
    if (!is_document(data, length)) return -1;
    size_t at = 4;
    while (at < length - 1) {
        unsigned char type = data[at++];
        const unsigned char *name = data + at;
        const unsigned char *name_end = memchr(name, 0, length - 1 - at);
        if (name_end == NULL) return -1;
        at = name_end + 1 - data;
        size_t size = value_size(type, data + at, length - 1 - at);
        if (size == (size_t)-1) return -1;
        Element element = {type, data + at, size};
        if (found(state, name, name_end - name, &element) < 0) return -1;
        at += size;
    }
    return at == length - 1 ? 0 : -1;
}

/* An element found by name: from its type byte to the end of its value (start NULL: not found). */
typedef struct {
    const char *name;
    const unsigned char *start, *end;
    int repeated;
} Found;

static int find_element(void *state, const unsigned char *name, size_t name_length, const Element *element) {
    Found *found = state;
    if (strlen(found->name) != name_length || memcmp(found->name, name, name_length) != 0) return 0;
    if (found->start != NULL) found->repeated = 1;
    found->start = name - 1;
    found->end = element->value + element->size;
    return 0;
}

/* id_document(data): a BSON document holding only the _id element of the document `data`; None when it has none,
   has several or is malformed. */
PyObject *id_document(PyObject *module, PyObject *argument) {
    Py_buffer view;
    if (PyObject_GetBuffer(argument, &view, PyBUF_SIMPLE) < 0) return NULL;
    Found id = {"_id", NULL, NULL, 0};
    PyObject *result;
    if (each_element(view.buf, (size_t)view.len, find_element, &id) < 0 || id.start == NULL || id.repeated) {
        result = Py_NewRef(Py_None);
    } else {
        size_t total = 4 + (size_t)(id.end - id.start) + 1;
        result = PyBytes_FromStringAndSize(NULL, total);
        if (result != NULL) {
            char *out = PyBytes_AS_STRING(result);
            out[0] = total & 0xFF, out[1] = (total >> 8) & 0xFF, out[2] = (total >> 16) & 0xFF, out[3] = total >> 24;
            memcpy(out + 4, id.start, id.end - id.start);
            out[total - 1] = 0;
        }
    }
    PyBuffer_Release(&view);
    return result;
}

/* split_event(data): a change event's BSON without its fullDocument and fullDocumentBeforeChange sub-documents,
   and those two as bytes (None where absent or not a document): (rest, full_document, full_document_before_change).
   None for malformed input. */
PyObject *split_event(PyObject *module, PyObject *argument) {
    Py_buffer view;
    if (PyObject_GetBuffer(argument, &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *data = view.buf;
    size_t length = (size_t)view.len;
    Found parts[2] = {{"fullDocument", NULL, NULL, 0}, {"fullDocumentBeforeChange", NULL, NULL, 0}};
    int valid = each_element(data, length, find_element, &parts[0]) == 0 &&
                each_element(data, length, find_element, &parts[1]) == 0;
    for (int k = 0; k < 2; k++) {
        if (parts[k].repeated) valid = 0;
        if (parts[k].start != NULL && parts[k].start[0] != 0x03) parts[k].start = NULL; /* not a document: kept */
    }
    if (!valid) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    PyObject *rest = NULL, *documents[2] = {NULL, NULL};
    size_t removed = 0;
    for (int k = 0; k < 2; k++) removed += parts[k].start ? (size_t)(parts[k].end - parts[k].start) : 0;
    rest = PyBytes_FromStringAndSize(NULL, length - removed);
    if (rest == NULL) goto failed;
    char *out = PyBytes_AS_STRING(rest);
    size_t copied = 0;
    const unsigned char *from = data;
    int first = parts[1].start != NULL && (parts[0].start == NULL || parts[1].start < parts[0].start);
    for (int n = 0; n < 2; n++) {
        const Found *part = &parts[n == 0 ? first : !first];
        if (part->start == NULL) continue;
        memcpy(out + copied, from, part->start - from);
        copied += part->start - from;
        from = part->end;
    }
    memcpy(out + copied, from, data + length - from);
    copied += data + length - from;
    uint32_t total = (uint32_t)copied;
    out[0] = total & 0xFF, out[1] = (total >> 8) & 0xFF, out[2] = (total >> 16) & 0xFF, out[3] = total >> 24;
    for (int k = 0; k < 2; k++) {
        if (parts[k].start == NULL) {
            documents[k] = Py_NewRef(Py_None);
            continue;
        }
        const unsigned char *value = parts[k].start + 1 + strlen(parts[k].name) + 1;
        documents[k] = PyBytes_FromStringAndSize((const char *)value, parts[k].end - value);
        if (documents[k] == NULL) goto failed;
    }
    PyBuffer_Release(&view);
    return Py_BuildValue("(NNN)", rest, documents[0], documents[1]);
failed:
    PyBuffer_Release(&view);
    Py_XDECREF(rest);
    Py_XDECREF(documents[0]);
    Py_XDECREF(documents[1]);
    return NULL;
}

/* take_named_field's state: the fields to take and the struct of Elements they go to (zeroed by the caller). */
typedef struct {
    const NamedField *fields;
    size_t count;
    void *target;
} NamedFields;

static int take_named_field(void *state, const unsigned char *name, size_t name_length, const Element *element) {
    const NamedFields *taking = state;
    for (size_t k = 0; k < taking->count; k++) {
        const NamedField *named = &taking->fields[k];
        if (named->length == name_length && memcmp(named->name, name, name_length) == 0) {
            Element *field = (Element *)((char *)taking->target + named->offset);
            if (field->type) return -1; /* a repeated field: left to the Python path */
            *field = *element;
            return 0;
        }
    }
    return 0;
}

/* Takes the elements of document data[0..length) named in `fields` into `target` (a struct of Elements, zeroed
   here); -1 for a malformed document or a repeated field. */
static int take_fields(const unsigned char *data, size_t length, const NamedField *fields, size_t count, void *target,
                       size_t target_size) {
    memset(target, 0, target_size);
    NamedFields taking = {fields, count, target};
    return each_element(data, length, take_named_field, &taking);
}

static int read_event(const unsigned char *data, size_t length, EventFields *fields) {
    return take_fields(data, length, EVENT_FIELDS, FIELD_COUNT(EVENT_FIELDS), fields, sizeof *fields);
}

/* The db and coll strings of an event's ns (text without its terminating 0; NULL where absent). */
typedef struct {
    const unsigned char *db, *coll;
    size_t db_length, coll_length;
} Namespace;

static int take_namespace_part(void *state, const unsigned char *name, size_t name_length, const Element *element) {
    Namespace *ns = state;
    int is_db = name_length == 2 && memcmp(name, "db", 2) == 0;
    int is_coll = name_length == 4 && memcmp(name, "coll", 4) == 0;
    if (!is_db && !is_coll) return 0;
    if (element->type != 0x02 || element->size < 5 || element->value[element->size - 1] != 0) return -1;
    const unsigned char **text = is_db ? &ns->db : &ns->coll;
    if (*text != NULL) return -1;
    *text = element->value + 4;
    *(is_db ? &ns->db_length : &ns->coll_length) = element->size - 5;
    return 0;
}

static int read_namespace(const Element *ns_element, Namespace *ns) {
    memset(ns, 0, sizeof *ns);
    if (ns_element->type != 0x03) return -1;
    if (each_element(ns_element->value, ns_element->size, take_namespace_part, ns) < 0) return -1;
    return ns->db != NULL && ns->coll != NULL ? 0 : -1;
}

static int is_string(const Element *element) {
    return element->type == 0x02 && element->size >= 5 && element->value[element->size - 1] == 0 &&
           (size_t)read_int32(element->value) == element->size - 4;
}

static int string_is(const Element *element, const char *text) {
    size_t length = strlen(text);
    return is_string(element) && element->size - 5 == length && memcmp(element->value + 4, text, length) == 0;
}

/* The last strings event_head made of operation types, databases and collections: a stream repeats a few of them,
   and handing out the same object spares a decoding, and the hashing of the strings where Python looks them up. */
#define RECENT_STRINGS 8
static PyObject *recent_strings[RECENT_STRINGS];
static unsigned next_recent;

static PyObject *string_or_none(const unsigned char *text, size_t length) {
    if (text == NULL) Py_RETURN_NONE;
    for (int k = 0; k < RECENT_STRINGS; k++) {
        PyObject *known = recent_strings[k];
        if (known != NULL && (size_t)PyUnicode_GET_LENGTH(known) == length && PyUnicode_IS_COMPACT_ASCII(known) &&
            memcmp(PyUnicode_DATA(known), text, length) == 0)
            return Py_NewRef(known);
    }
    PyObject *made = PyUnicode_DecodeUTF8((const char *)text, length, "strict");
    if (made != NULL && PyUnicode_IS_COMPACT_ASCII(made)) {
        PyObject **slot = &recent_strings[next_recent++ % RECENT_STRINGS];
        Py_XSETREF(*slot, Py_NewRef(made));
    }
    return made;
}

/* The resume token (an event's _id document): {"_data": <str>} built here when that is all it holds (what servers
   send), else its BSON bytes for Python to decode. */
static PyObject *resume_token(const Element *id) {
    Found data = {"_data", NULL, NULL, 0};
    if (each_element(id->value, id->size, find_element, &data) < 0 || data.start == NULL || data.repeated ||
        data.start[0] != 0x02 || (size_t)(data.end - data.start) + 5 != id->size)
        return PyBytes_FromStringAndSize((const char *)id->value, id->size);
    const unsigned char *text = data.start + 1 + sizeof "_data" + 4; /* type, name and its 0, string length */
    PyObject *value = PyUnicode_DecodeUTF8((const char *)text, data.end - 1 - text, "strict");
    if (value == NULL) return NULL;
    static PyObject *data_key = NULL; /* "_data", made once: the GIL is held */
    if (data_key == NULL && (data_key = PyUnicode_InternFromString("_data")) == NULL) {
        Py_DECREF(value);
        return NULL;
    }
    PyObject *token = PyDict_New();
    if (token == NULL || PyDict_SetItem(token, data_key, value) < 0) Py_CLEAR(token);
    Py_DECREF(value);
    return token;
}

/* A tuple of `count` new references, which it takes; NULL (each released) when one of them is NULL (its error
   set) or the tuple cannot be made. */
static PyObject *tuple_taking(PyObject **items, Py_ssize_t count) {
    PyObject *tuple = NULL;
    for (Py_ssize_t k = 0; k < count; k++)
        if (items[k] == NULL) goto failed;
    if ((tuple = PyTuple_New(count)) == NULL) goto failed;
    for (Py_ssize_t k = 0; k < count; k++) PyTuple_SET_ITEM(tuple, k, items[k]);
    return tuple;
failed:
    for (Py_ssize_t k = 0; k < count; k++) Py_XDECREF(items[k]);
    return NULL;
}

/* (time, increment) of a clusterTime timestamp element; None for another type. */
static PyObject *time_and_increment(const Element *cluster_time) {
    if (cluster_time->type != 0x11) Py_RETURN_NONE;
    PyObject *pair[2] = {PyLong_FromUnsignedLong((uint32_t)read_int32(cluster_time->value + 4)), NULL};
    if (pair[0] != NULL) pair[1] = PyLong_FromUnsignedLong((uint32_t)read_int32(cluster_time->value));
    return tuple_taking(pair, 2);
}

/* event_head(data): (operationType, db, coll, resume token (see resume_token), (time, increment) of clusterTime,
   updateDescription as BSON bytes), each None where the event has none of it; None for malformed input or text that
   is not UTF-8. */
PyObject *event_head(PyObject *module, PyObject *argument) {
    Py_buffer view;
    if (PyObject_GetBuffer(argument, &view, PyBUF_SIMPLE) < 0) return NULL;
    EventFields fields;
    Namespace ns = {NULL, NULL, 0, 0};
    PyObject *result = NULL;
    if (read_event(view.buf, (size_t)view.len, &fields) < 0 || (fields.ns.type && read_namespace(&fields.ns, &ns) < 0) ||
        (fields.operation_type.type && !is_string(&fields.operation_type))) {
        PyBuffer_Release(&view);
        Py_RETURN_NONE;
    }
    /* Each item is made only while no error is pending: a Python call with an exception set is an error itself. */
    PyObject *items[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    if ((items[0] = fields.operation_type.type
                        ? string_or_none(fields.operation_type.value + 4, fields.operation_type.size - 5)
                        : Py_NewRef(Py_None)) != NULL &&
        (items[1] = string_or_none(ns.db, ns.db_length)) != NULL &&
        (items[2] = string_or_none(ns.coll, ns.coll_length)) != NULL &&
        (items[3] = fields.id.type == 0x03 ? resume_token(&fields.id) : Py_NewRef(Py_None)) != NULL &&
        (items[4] = time_and_increment(&fields.cluster_time)) != NULL)
        items[5] = fields.update_description.type == 0x03
                       ? PyBytes_FromStringAndSize((const char *)fields.update_description.value,
                                                   fields.update_description.size)
                       : Py_NewRef(Py_None);
    PyBuffer_Release(&view);
    for (int k = 0; k < 6; k++) {
        if (items[k] == NULL) {
            if (PyErr_ExceptionMatches(PyExc_UnicodeDecodeError)) {
                PyErr_Clear();
                result = Py_NewRef(Py_None);
            }
            for (int j = 0; j < 6; j++) Py_XDECREF(items[j]);
            return result;
        }
    }
    return tuple_taking(items, 6);
}

/* --- Debezium's value ------------------------------------------------------------------------------------------ */

/* Whether text[0..length) is valid UTF-8 (what Python could have decoded). */
static int valid_utf8(const unsigned char *text, size_t length) {
    uint32_t code;
    for (size_t i = 0, size; i < length; i += size)
        if ((size = read_utf8(text + i, length - i, &code)) == 0) return 0;
    return 1;
}

static const char UPPER_HEX[] = "0123456789ABCDEF";

static int put_upper_unit(Buffer *out, unsigned unit) {
    char text[6] = {'\\', 'u', UPPER_HEX[(unit >> 12) & 15], UPPER_HEX[(unit >> 8) & 15], UPPER_HEX[(unit >> 4) & 15],
                    UPPER_HEX[unit & 15]};
    return put(out, text, 6);
}

/* The first index from `i` of a byte Jackson escapes, or of a 4-byte UTF-8 sequence's lead byte. */
static size_t connect_plain_end(const unsigned char *text, size_t i, size_t length) {
    while (i + 8 <= length) {
        uint64_t word = load_word(text + i);
        if (any_control(word) | any_byte_is(word, '"') | any_byte_is(word, '\\') |
            any_byte_is(word & 0xF0F0F0F0F0F0F0F0ULL, 0xF0))
            break;
        i += 8;
    }
    while (i < length && text[i] >= 0x20 && text[i] != '"' && text[i] != '\\' && text[i] < 0xF0) i++;
    return i;
}

/* A quoted JSON string as Kafka Connect's JsonConverter (Jackson's UTF-8 writer) writes valid UTF-8 text: control
   characters other than \b \t \n \f \r as upper-case \u00XX, a character beyond the Basic Multilingual Plane as its two
   UTF-16 units escaped (connectors/events/json_converter.string_json). Names inside the envelope (db, collection,
   removedFields, truncatedArrays' fields) can hold both; the documents' Extended JSON text holds neither. */
static int put_json_string(Buffer *out, const unsigned char *text, size_t length) {
    if (put_char(out, '"') < 0) return -1;
    size_t i = 0;
    while (i < length) {
        size_t run = connect_plain_end(text, i, length);
        if (run > i && put(out, (const char *)text + i, run - i) < 0) return -1;
        if (run >= length) break;
        unsigned char c = text[run];
        if (c >= 0xF0 && run + 3 < length) { /* valid UTF-8: a lead byte and three continuations */
            uint32_t code = ((c & 7u) << 18) | ((text[run + 1] & 63u) << 12) | ((text[run + 2] & 63u) << 6) |
                            (text[run + 3] & 63u);
            code -= 0x10000;
            if (put_upper_unit(out, 0xD800 + (code >> 10)) < 0 || put_upper_unit(out, 0xDC00 + (code & 0x3FF)) < 0)
                return -1;
            i = run + 4;
            continue;
        }
        if (c < 0x20 && c != '\b' && c != '\f' && c != '\n' && c != '\r' && c != '\t') {
            if (put_upper_unit(out, c) < 0) return -1;
        } else if (put_escaped_ascii(out, c) < 0) {
            return -1;
        }
        i = run + 1;
    }
    return put_char(out, '"');
}

/* `null`, or the strict Extended JSON text of a document as a JSON string (what envelopes._json_or_none gives). */
static Outcome put_document_string(Buffer *out, Buffer *scratch, const Element *element, int bare) {
    if (element->type == 0 || element->type == 0x0A) return PUT_LITERAL(out, "null") < 0 ? NO_MEMORY : WRITTEN;
    if (element->type != 0x03) return UNSUPPORTED;
    scratch->length = 0;
    Outcome outcome = put_document(scratch, element->value, element->size, bare);
    if (outcome != WRITTEN) return outcome;
    return put_json_string(out, (const unsigned char *)scratch->data, scratch->length) < 0 ? NO_MEMORY : WRITTEN;
}

/* `before` or `after`: the document where the operation has it (`wanted`), else null. */
static Outcome put_image(Buffer *out, Buffer *scratch, const Element *element, int wanted, int bare) {
    if (wanted) return put_document_string(out, scratch, element, bare);
    if (element->type && element->type != 0x03 && element->type != 0x0A) return UNSUPPORTED;
    return PUT_LITERAL(out, "null") < 0 ? NO_MEMORY : WRITTEN;
}

static int take_id(void *state, const unsigned char *name, size_t name_length, const Element *element) {
    if (name_length == 3 && memcmp(name, "_id", 3) == 0) {
        Element *id = state;
        if (id->type) return -1;
        *id = *element;
    }
    return 0;
}

/* The key {"id": <extjson.key_json of the _id>} of the common _id types; UNSUPPORTED for the others. */
static Outcome put_key(Buffer *out, Buffer *scratch, const Element *document_key) {
    Element id = {0, NULL, 0};
    if (document_key->type != 0x03 || each_element(document_key->value, document_key->size, take_id, &id) < 0)
        return UNSUPPORTED;
    scratch->length = 0;
    int failed;
    switch (id.type) {
        case 0x10: failed = put_int64(scratch, read_int32(id.value)); break;
        case 0x12: failed = put_int64(scratch, read_int64(id.value)); break;
        case 0x02: {
            if (!is_string(&id)) return UNSUPPORTED;
            Outcome outcome = put_string(scratch, id.value + 4, id.size - 5);
            if (outcome != WRITTEN) return outcome;
            failed = 0;
            break;
        }
        case 0x07: {
            static const char HEX[] = "0123456789abcdef";
            char text[40] = "{\"$oid\": \"";
            char *p = text + strlen(text);
            for (int k = 0; k < 12; k++) {
                *p++ = HEX[id.value[k] >> 4];
                *p++ = HEX[id.value[k] & 15];
            }
            *p++ = '"';
            *p++ = '}';
            failed = put(scratch, text, p - text);
            break;
        }
        default: return UNSUPPORTED;
    }
    if (failed || PUT_LITERAL(out, "{\"id\":") < 0 ||
        put_json_string(out, (const unsigned char *)scratch->data, scratch->length) < 0 || put_char(out, '}') < 0)
        return NO_MEMORY;
    return WRITTEN;
}

/* --- an update's updateDescription block ------------------------------------------------------------------- */

/* The fields of an updateDescription this module reads (the others, e.g. disambiguatedPaths, are not written). */
typedef struct {
    Element updated, removed, truncated;
} Description;

static const NamedField DESCRIPTION_FIELDS[] = {
    NAMED_FIELD(Description, "updatedFields", updated),
    NAMED_FIELD(Description, "removedFields", removed),
    NAMED_FIELD(Description, "truncatedArrays", truncated),
};

/* A JSON string of a BSON string element's text; UNSUPPORTED unless it is valid UTF-8. */
static Outcome put_string_element(Buffer *out, const Element *element) {
    if (!is_string(element) || !valid_utf8(element->value + 4, element->size - 5)) return UNSUPPORTED;
    return put_json_string(out, element->value + 4, element->size - 5) < 0 ? NO_MEMORY : WRITTEN;
}

typedef struct {
    Buffer *out;
    Outcome outcome;
    int count;
} ListWriting;

static int put_removed_field(void *state, const unsigned char *name, size_t name_length, const Element *element) {
    ListWriting *list = state;
    if (list->count++ && put_char(list->out, ',') < 0) return list->outcome = NO_MEMORY, -1;
    list->outcome = put_string_element(list->out, element);
    return list->outcome == WRITTEN ? 0 : -1;
}

typedef struct {
    Element field, new_size;
} Truncation;

static const NamedField TRUNCATION_FIELDS[] = {
    NAMED_FIELD(Truncation, "field", field),
    NAMED_FIELD(Truncation, "newSize", new_size),
};

static int put_truncation(void *state, const unsigned char *name, size_t name_length, const Element *element) {
    ListWriting *list = state;
    Truncation truncation;
    list->outcome = UNSUPPORTED;
    if (element->type != 0x03 || take_fields(element->value, element->size, TRUNCATION_FIELDS,
                                             FIELD_COUNT(TRUNCATION_FIELDS), &truncation, sizeof truncation) < 0)
        return -1;
    long long size;
    if (truncation.new_size.type == 0x10) size = read_int32(truncation.new_size.value);
    else if (truncation.new_size.type == 0x12) size = read_int64(truncation.new_size.value);
    else return -1;
    if ((list->count++ && put_char(list->out, ',') < 0) || PUT_LITERAL(list->out, "{\"field\":") < 0)
        return list->outcome = NO_MEMORY, -1;
    if ((list->outcome = put_string_element(list->out, &truncation.field)) != WRITTEN) return -1;
    if (PUT_LITERAL(list->out, ",\"size\":") < 0 || put_int64(list->out, size) < 0 || put_char(list->out, '}') < 0)
        return list->outcome = NO_MEMORY, -1;
    return 0;
}

/* `[items]` of a BSON array, each written by `put_item`, or null when it is absent, null or empty (Python's
   `list(…) or None`). */
static Outcome put_list_or_null(Buffer *out, const Element *array, OnElement put_item) {
    if (array->type == 0 || array->type == 0x0A || (array->type == 0x04 && array->size == 5))
        return PUT_LITERAL(out, "null") < 0 ? NO_MEMORY : WRITTEN;
    if (array->type != 0x04) return UNSUPPORTED;
    ListWriting list = {out, WRITTEN, 0};
    if (put_char(out, '[') < 0) return NO_MEMORY;
    if (each_element(array->value, array->size, put_item, &list) < 0) return list.outcome == WRITTEN ? UNSUPPORTED
                                                                                                    : list.outcome;
    return put_char(out, ']') < 0 ? NO_MEMORY : WRITTEN;
}

/* The updateDescription block of an update (envelopes.update_description_block, as encode_envelope writes it) from
   the event's updateDescription document: {"removedFields":…,"updatedFields":"<relaxed JSON>","truncatedArrays":…}.
   UNSUPPORTED where Python must write it (a value relaxed mode writes differently, a field of another type). */
static Outcome put_update_description(Buffer *out, Buffer *scratch, const Element *element) {
    Description description;
    if (element->type != 0x03 || take_fields(element->value, element->size, DESCRIPTION_FIELDS,
                                             FIELD_COUNT(DESCRIPTION_FIELDS), &description, sizeof description) < 0)
        return UNSUPPORTED;
    Outcome outcome;
    if (PUT_LITERAL(out, "{\"removedFields\":") < 0) return NO_MEMORY;
    if ((outcome = put_list_or_null(out, &description.removed, put_removed_field)) != WRITTEN) return outcome;
    if (PUT_LITERAL(out, ",\"updatedFields\":") < 0) return NO_MEMORY;
    scratch->length = 0;
    if (description.updated.type == 0 || description.updated.type == 0x0A) {
        if (PUT_LITERAL(scratch, "{}") < 0) return NO_MEMORY;
    } else if (description.updated.type != 0x03) {
        return UNSUPPORTED;
    } else if ((outcome = put_relaxed_document(scratch, description.updated.value, description.updated.size)) !=
               WRITTEN) {
        return outcome;
    }
    if (put_json_string(out, (const unsigned char *)scratch->data, scratch->length) < 0 ||
        PUT_LITERAL(out, ",\"truncatedArrays\":") < 0)
        return NO_MEMORY;
    if ((outcome = put_list_or_null(out, &description.truncated, put_truncation)) != WRITTEN) return outcome;
    return put_char(out, '}') < 0 ? NO_MEMORY : WRITTEN;
}

/* Milliseconds to microseconds and nanoseconds stay within int64 (Python's ints would not overflow). */
#define MAX_EXACT_MILLIS 9000000000000LL

static Outcome put_value(Buffer *out, Buffer *scratch, const EventFields *fields, const Namespace *ns,
                         const char *source_prefix, size_t prefix_length, int bare, long long ts_ms,
                         const char *description, size_t description_length, const char *rs, size_t rs_length) {
    char op;
    if (string_is(&fields->operation_type, "insert")) op = 'c';
    else if (string_is(&fields->operation_type, "update") || string_is(&fields->operation_type, "replace")) op = 'u';
    else if (string_is(&fields->operation_type, "delete")) op = 'd';
    else return UNSUPPORTED;
    if (fields->update_description.type && op == 'u' && description == NULL) return UNSUPPORTED;
    if (!valid_utf8(ns->db, ns->db_length) || !valid_utf8(ns->coll, ns->coll_length)) return UNSUPPORTED;

    long long when = 0, order = 0, wall = 0;
    int has_wall = fields->wall_time.type == 0x09, has_time = fields->cluster_time.type == 0x11;
    if (fields->wall_time.type && !has_wall && fields->wall_time.type != 0x0A) return UNSUPPORTED;
    if (fields->cluster_time.type && !has_time && fields->cluster_time.type != 0x0A) return UNSUPPORTED;
    long long increment = has_time ? (uint32_t)read_int32(fields->cluster_time.value) : 0;
    if (has_wall) wall = read_int64(fields->wall_time.value);
    if (rs != NULL) {  /* Debezium 2.x: ts_ms from the cluster time even with a wallTime; no ts_us and ts_ns */
        when = has_time ? 1000LL * (uint32_t)read_int32(fields->cluster_time.value + 4) : 0;
        order = increment;
    } else if (has_wall) {
        when = wall;
        order = increment;
    } else if (has_time) {
        when = 1000LL * (uint32_t)read_int32(fields->cluster_time.value + 4);
        order = increment;
    }
    if (rs == NULL && (when > MAX_EXACT_MILLIS || when < -MAX_EXACT_MILLIS)) return UNSUPPORTED;

    Outcome outcome;
    if (PUT_LITERAL(out, "{\"before\":") < 0) return NO_MEMORY;
    if ((outcome = put_image(out, scratch, &fields->before, op != 'c', bare)) != WRITTEN) return outcome;
    if (PUT_LITERAL(out, ",\"after\":") < 0) return NO_MEMORY;
    if ((outcome = put_image(out, scratch, &fields->full_document, op != 'd', bare)) != WRITTEN) return outcome;
    if (PUT_LITERAL(out, ",\"updateDescription\":") < 0) return NO_MEMORY;
    if (op == 'u' && fields->update_description.type ? put(out, description, description_length) < 0
                                                       : PUT_LITERAL(out, "null") < 0)
        return NO_MEMORY;
    if (PUT_LITERAL(out, ",\"source\":") < 0 || put(out, source_prefix, prefix_length) < 0 || put_int64(out, when) < 0 ||
        PUT_LITERAL(out, ",\"snapshot\":\"false\",\"db\":") < 0 || put_json_string(out, ns->db, ns->db_length) < 0 ||
        PUT_LITERAL(out, ",\"sequence\":null") < 0)
        return NO_MEMORY;
    if (rs != NULL ? PUT_LITERAL(out, ",\"rs\":") < 0 || put(out, rs, rs_length) < 0
                   : PUT_LITERAL(out, ",\"ts_us\":") < 0 || put_int64(out, when * 1000) < 0 ||
                         PUT_LITERAL(out, ",\"ts_ns\":") < 0 || put_int64(out, when * 1000000) < 0)
        return NO_MEMORY;
    if (PUT_LITERAL(out, ",\"collection\":") < 0 || put_json_string(out, ns->coll, ns->coll_length) < 0 ||
        PUT_LITERAL(out, ",\"ord\":") < 0 || put_int64(out, order) < 0 || PUT_LITERAL(out, ",\"lsid\":") < 0)
        return NO_MEMORY;
    if (fields->lsid.type && fields->lsid.type != 0x0A) {
        if ((outcome = put_document_string(out, scratch, &fields->lsid, bare)) != WRITTEN) return outcome;
    } else if (PUT_LITERAL(out, "null") < 0) {
        return NO_MEMORY;
    }
    if (PUT_LITERAL(out, ",\"txnNumber\":") < 0) return NO_MEMORY;
    int failed;
    switch (fields->txn_number.type) {
        case 0: case 0x0A: failed = PUT_LITERAL(out, "null"); break;
        case 0x10: failed = put_int64(out, read_int32(fields->txn_number.value)); break;
        case 0x12: failed = put_int64(out, read_int64(fields->txn_number.value)); break;
        default: return UNSUPPORTED;
    }
    if (failed || PUT_LITERAL(out, ",\"wallTime\":") < 0 ||
        (has_wall ? put_int64(out, wall) : PUT_LITERAL(out, "null")) < 0 || PUT_LITERAL(out, "},\"op\":\"") < 0 ||
        put_char(out, op) < 0 || PUT_LITERAL(out, "\",\"ts_ms\":") < 0 || put_int64(out, ts_ms) < 0 ||
        PUT_LITERAL(out, ",\"transaction\":null}") < 0)
        return NO_MEMORY;
    return WRITTEN;
}

/* The value, key and scratch buffers change_value and snapshot_value write into, kept from one call to the next: a
   call allocates nothing but its results. The interpreter lock is held throughout a call and nothing in one calls
   back into Python, so no two calls share them. A buffer a large document grew past KEPT_CAPACITY is given back. */
#define KEPT_CAPACITY ((size_t)1 << 20)
static Buffer kept_buffers[3];
static Buffer kept_description; /* change_messages' and update_description's */

static void take_buffers(Buffer *value, Buffer *key, Buffer *scratch) {
    *value = kept_buffers[0], *key = kept_buffers[1], *scratch = kept_buffers[2];
    value->length = key->length = scratch->length = 0;
}

static void keep_buffer(Buffer *slot, const Buffer *used) {
    if (used->capacity > KEPT_CAPACITY) {
        PyMem_RawFree(used->data);
        *slot = (Buffer){NULL, 0, 0};
    } else {
        *slot = *used;
    }
}

/* (value, key) as bytes (key None when not written), None when the value was not written, NULL on error; the three
   buffers are kept for the next call. */
static PyObject *written_pair(Outcome outcome, Outcome key_outcome, Buffer *value, Buffer *key, Buffer *scratch) {
    PyObject *result = NULL;
    if (outcome == NO_MEMORY || key_outcome == NO_MEMORY) {
        PyErr_NoMemory();
    } else if (outcome != WRITTEN) {
        result = Py_NewRef(Py_None);
    } else {
        PyObject *key_bytes =
            key_outcome == WRITTEN ? PyBytes_FromStringAndSize(key->data, key->length) : Py_NewRef(Py_None);
        PyObject *value_bytes = key_bytes ? PyBytes_FromStringAndSize(value->data, value->length) : NULL;
        result = value_bytes != NULL ? PyTuple_Pack(2, value_bytes, key_bytes) : NULL;
        Py_XDECREF(value_bytes);
        Py_XDECREF(key_bytes);
    }
    keep_buffer(&kept_buffers[0], value);
    keep_buffer(&kept_buffers[1], key);
    keep_buffer(&kept_buffers[2], scratch);
    return result;
}

/* The arguments change_value and snapshot_value share: (data, source_prefix, bare_non_finite, ts_ms, ...). */
typedef struct {
    int bare;
    long long ts_ms;
    char *prefix;
    Py_ssize_t prefix_length;
} Writing;

static int read_writing(PyObject *const *args, Py_ssize_t nargs, Py_ssize_t wanted, const char *usage,
                        Writing *writing) {
    if (nargs != wanted) {
        PyErr_Format(PyExc_TypeError, "%s takes %zd arguments", usage, wanted);
        return -1;
    }
    if (!writer_ready()) {
        PyErr_SetString(PyExc_RuntimeError, "set_escape_table() was not called");
        return -1;
    }
    if ((writing->bare = PyObject_IsTrue(args[2])) < 0) return -1;
    writing->ts_ms = PyLong_AsLongLong(args[3]);
    if (writing->ts_ms == -1 && PyErr_Occurred()) return -1;
    return PyBytes_AsStringAndSize(args[1], &writing->prefix, &writing->prefix_length);
}

/* (value, key) of a change event's BSON data[0..length) as change_value answers (key None, or None), written into
   the kept buffers. `description` is an update's updateDescription block as text (NULL: none given); with `describe`
   the block is written here from the event's updateDescription instead. */
static PyObject *written_change(const unsigned char *data, size_t length, const Writing *writing,
                                const char *description, size_t description_length, int describe, const char *rs,
                                size_t rs_length) {
    EventFields fields;
    Namespace ns;
    Buffer value, key, scratch, block = kept_description;
    take_buffers(&value, &key, &scratch);
    block.length = 0;
    Outcome outcome = UNSUPPORTED, key_outcome = UNSUPPORTED;
    if (read_event(data, length, &fields) == 0 && read_namespace(&fields.ns, &ns) == 0) {
        if (grow(&value, length * 2 + 512) < 0 || grow(&scratch, length + 256) < 0) {
            outcome = NO_MEMORY;
        } else {
            outcome = WRITTEN;
            if (describe && fields.update_description.type &&
                (outcome = put_update_description(&block, &scratch, &fields.update_description)) == WRITTEN)
                description = block.data, description_length = block.length;
            if (outcome == WRITTEN)
                outcome = put_value(&value, &scratch, &fields, &ns, writing->prefix, writing->prefix_length,
                                    writing->bare, writing->ts_ms, description, description_length, rs, rs_length);
            if (outcome == WRITTEN) key_outcome = put_key(&key, &scratch, &fields.document_key);
        }
    }
    keep_buffer(&kept_description, &block);
    return written_pair(outcome, key_outcome, &value, &key, &scratch);
}

/* change_value(data, source_prefix, bare_non_finite, ts_ms, update_description, rs): (value, key) of a change event's
   raw BSON, as Debezium 3.x's MongoDB connector writes them without schemas; key None for an _id of a type other
   than int, string and ObjectId. `source_prefix` is the source block's text up to its ts_ms value; update_description
   is the JSON text of the updateDescription block (required when the event has one); rs None, or the replica set's
   name as a JSON string for Debezium 2.x's source block (ts_ms and ord from the cluster time, `rs` in place of
   ts_us and ts_ns). None when this code does not
   write the event (an operation other than insert, update, replace and delete; a document the writer leaves to
   Python; malformed input): the Python path does. */
PyObject *change_value(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    Writing writing;
    if (read_writing(args, nargs, 6, "change_value(data, source_prefix, bare_non_finite, ts_ms, update_description, rs)",
                     &writing) < 0)
        return NULL;
    char *description = NULL, *rs = NULL;
    Py_ssize_t description_length = 0, rs_length = 0;
    if (args[4] != Py_None && PyBytes_AsStringAndSize(args[4], &description, &description_length) < 0) return NULL;
    if (args[5] != Py_None && PyBytes_AsStringAndSize(args[5], &rs, &rs_length) < 0) return NULL;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    PyObject *pair = written_change(view.buf, (size_t)view.len, &writing, description, description_length, 0, rs,
                                    rs_length);
    PyBuffer_Release(&view);
    return pair;
}

/* snapshot_value(data, source_prefix, bare_non_finite, ts_ms, snapshot, db, coll): (value, key) of a snapshot read
   of the document `data`, as change_value writes a change (key None for an _id it leaves to Python); `snapshot` is
   source.snapshot's value. None when this code does not write the document. */
PyObject *snapshot_value(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    Writing writing;
    if (read_writing(args, nargs, 7, "snapshot_value(data, source_prefix, bare_non_finite, ts_ms, snapshot, db, coll)",
                     &writing) < 0)
        return NULL;
    const char *prefix = writing.prefix;
    Py_ssize_t prefix_length = writing.prefix_length, lengths[3];
    long long ts_ms = writing.ts_ms;
    int bare = writing.bare;
    const char *texts[3];
    for (int k = 0; k < 3; k++)
        if ((texts[k] = PyUnicode_AsUTF8AndSize(args[4 + k], &lengths[k])) == NULL) return NULL;
    if (ts_ms > MAX_EXACT_MILLIS || ts_ms < -MAX_EXACT_MILLIS) Py_RETURN_NONE;
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    Element document = {0x03, view.buf, (size_t)view.len};
    Buffer value, key, scratch;
    take_buffers(&value, &key, &scratch);
    Outcome outcome = NO_MEMORY, key_outcome = UNSUPPORTED;
    if (grow(&value, (size_t)view.len * 2 + 512) == 0 && grow(&scratch, (size_t)view.len + 256) == 0) {
        int failed = PUT_LITERAL(&value, "{\"before\":null,\"after\":") < 0;
        outcome = failed ? NO_MEMORY : put_document_string(&value, &scratch, &document, bare);
        if (outcome == WRITTEN &&
            (PUT_LITERAL(&value, ",\"updateDescription\":null,\"source\":") < 0 ||
             put(&value, prefix, prefix_length) < 0 || put_int64(&value, ts_ms) < 0 ||
             PUT_LITERAL(&value, ",\"snapshot\":") < 0 ||
             put_json_string(&value, (const unsigned char *)texts[0], lengths[0]) < 0 ||
             PUT_LITERAL(&value, ",\"db\":") < 0 ||
             put_json_string(&value, (const unsigned char *)texts[1], lengths[1]) < 0 ||
             PUT_LITERAL(&value, ",\"sequence\":null,\"ts_us\":") < 0 || put_int64(&value, ts_ms * 1000) < 0 ||
             PUT_LITERAL(&value, ",\"ts_ns\":") < 0 || put_int64(&value, ts_ms * 1000000) < 0 ||
             PUT_LITERAL(&value, ",\"collection\":") < 0 ||
             put_json_string(&value, (const unsigned char *)texts[2], lengths[2]) < 0 ||
             PUT_LITERAL(&value, ",\"ord\":-1,\"lsid\":null,\"txnNumber\":null,\"wallTime\":null},\"op\":\"r\","
                                 "\"ts_ms\":") < 0 ||
             put_int64(&value, ts_ms) < 0 || PUT_LITERAL(&value, ",\"transaction\":null}") < 0))
            outcome = NO_MEMORY;
        if (outcome == WRITTEN) key_outcome = put_key(&key, &scratch, &document);
    }
    PyBuffer_Release(&view);
    return written_pair(outcome, key_outcome, &value, &key, &scratch);
}

/* --- a change stream reply's batch ----------------------------------------------------------------------------- */

/* What reply_events builds: one event_class holding (data, event_head(data)) per document of the batch. */
typedef struct {
    PyObject *module, *event_class, *events;
} BatchEvents;

/* An instance of `event_class` (a class with the slots raw and head) holding them, built without calling its
   __init__: a Python call per event cost more than the rest of building it. */
static PyObject *new_event(PyObject *event_class, PyObject *data, PyObject *head) {
    static PyObject *raw_name = NULL, *head_name = NULL;
    if (raw_name == NULL && ((raw_name = PyUnicode_InternFromString("raw")) == NULL ||
                             (head_name = PyUnicode_InternFromString("head")) == NULL))
        return NULL;
    PyTypeObject *type = (PyTypeObject *)event_class;
    PyObject *event = type->tp_alloc(type, 0);
    if (event != NULL && (PyObject_SetAttr(event, raw_name, data) < 0 || PyObject_SetAttr(event, head_name, head) < 0))
        Py_CLEAR(event);
    return event;
}

static int take_batch_event(void *state, const unsigned char *name, size_t name_length, const Element *element) {
    BatchEvents *batch = state;
    if (element->type != 0x03) return -1;
    PyObject *data = PyBytes_FromStringAndSize((const char *)element->value, element->size);
    if (data == NULL) return -1;
    PyObject *head = event_head(batch->module, data);
    PyObject *event = head != NULL ? new_event(batch->event_class, data, head) : NULL;
    Py_DECREF(data);
    Py_XDECREF(head);
    int failed = event == NULL || PyList_Append(batch->events, event) < 0;
    Py_XDECREF(event);
    return failed ? -1 : 0;
}

/* The document `data[0..length)` without the element found.start..found.end, as bytes. */
static PyObject *without_element(const unsigned char *data, size_t length, const Found *found) {
    size_t removed = (size_t)(found->end - found->start), total = length - removed;
    PyObject *rest = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)total);
    if (rest == NULL) return NULL;
    char *out = PyBytes_AS_STRING(rest);
    size_t before = (size_t)(found->start - data);
    memcpy(out, data, before);
    memcpy(out + before, found->end, length - before - removed);
    out[0] = total & 0xFF, out[1] = (total >> 8) & 0xFF, out[2] = (total >> 16) & 0xFF, out[3] = total >> 24;
    return rest;
}

/* reply_events(reply, event_class): the events of a change stream reply (an aggregate's or a getMore's raw BSON),
   each an event_class holding its BSON bytes (raw) and their event_head (head), built without its __init__, and
   the reply's cursor document without its batch (id, ns, postBatchResumeToken) as BSON: (events, cursor). None when the reply is not a cursor
   with one batch of documents (then the caller decodes it). Building the events here costs a fraction of what
   decoding the reply with a document class costs: that runs RawBSONDocument's Python constructor once per event. */
PyObject *reply_events(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "reply_events(reply, event_class) takes 2 arguments");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(args[0], &view, PyBUF_SIMPLE) < 0) return NULL;
    const unsigned char *data = view.buf;
    size_t length = (size_t)view.len;
    PyObject *result = NULL;
    if (!PyType_Check(args[1])) {
        PyBuffer_Release(&view);
        PyErr_SetString(PyExc_TypeError, "reply_events: event_class must be a class");
        return NULL;
    }
    Found cursor = {"cursor", NULL, NULL, 0};
    Found batches[2] = {{"firstBatch", NULL, NULL, 0}, {"nextBatch", NULL, NULL, 0}};
    if (each_element(data, length, find_element, &cursor) < 0 || cursor.start == NULL || cursor.repeated ||
        cursor.start[0] != 0x03) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    const unsigned char *cursor_data = cursor.start + 1 + sizeof "cursor";
    size_t cursor_length = (size_t)(cursor.end - cursor_data);
    if (each_element(cursor_data, cursor_length, find_element, &batches[0]) < 0 ||
        each_element(cursor_data, cursor_length, find_element, &batches[1]) < 0 ||
        (batches[0].start == NULL) == (batches[1].start == NULL) || batches[0].repeated || batches[1].repeated) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    const Found *batch = batches[0].start != NULL ? &batches[0] : &batches[1];
    if (batch->start[0] != 0x04) {
        result = Py_NewRef(Py_None);
        goto done;
    }
    const unsigned char *array = batch->start + 1 + strlen(batch->name) + 1;
    BatchEvents events = {module, args[1], PyList_New(0)};
    if (events.events == NULL) goto done;
    if (each_element(array, (size_t)(batch->end - array), take_batch_event, &events) < 0) {
        Py_DECREF(events.events);
        if (!PyErr_Occurred()) result = Py_NewRef(Py_None); /* not documents, or malformed */
        goto done;
    }
    PyObject *rest = without_element(cursor_data, cursor_length, batch);
    result = rest != NULL ? Py_BuildValue("(NN)", events.events, rest) : NULL;
    if (rest == NULL) Py_DECREF(events.events);
done:
    PyBuffer_Release(&view);
    return result;
}

/* --- a run of change events to Kafka messages ------------------------------------------------------------------ */

/* What change_messages needs besides the events, from its `writing` tuple. */
typedef struct {
    PyTypeObject *event_class, *message_class;
    PyObject *topics;   /* {db: {coll: topic}} of the captured collections written as they are */
    PyObject *skipped;  /* str: the operations ("c", "u", "d") skipped.operations leaves out */
    Writing writing;
    char *rs;
    Py_ssize_t rs_length;
    int tombstones;
    PyObject *no_headers, *change_kind, *tombstone_kind;
} Run;

/* A message_class instance (a slotted class of topic, key, value, headers and kind) built without its __init__. */
static PyObject *new_message(const Run *run, PyObject *topic, PyObject *key, PyObject *value, PyObject *kind) {
    static PyObject *names[5] = {NULL};
    static const char *const texts[5] = {"topic", "key", "value", "headers", "kind"};
    for (int k = 0; k < 5; k++)
        if (names[k] == NULL && (names[k] = PyUnicode_InternFromString(texts[k])) == NULL) return NULL;
    PyObject *message = run->message_class->tp_alloc(run->message_class, 0);
    PyObject *values[5] = {topic, key, value, run->no_headers, kind};
    for (int k = 0; message != NULL && k < 5; k++)
        if (PyObject_SetAttr(message, names[k], values[k]) < 0) Py_CLEAR(message);
    return message;
}

static int read_run(PyObject *writing, Run *run) {
    if (!PyTuple_Check(writing) || PyTuple_GET_SIZE(writing) != 12) {
        PyErr_SetString(PyExc_TypeError, "change_messages: writing must be a tuple of 12");
        return -1;
    }
    PyObject *const *items = &PyTuple_GET_ITEM(writing, 0);
    if (!PyType_Check(items[0]) || !PyType_Check(items[1]) || !PyDict_Check(items[2]) || !PyUnicode_Check(items[3])) {
        PyErr_SetString(PyExc_TypeError, "change_messages: (event_class, message_class, topics, skipped, ...)");
        return -1;
    }
    run->event_class = (PyTypeObject *)items[0];
    run->message_class = (PyTypeObject *)items[1];
    run->topics = items[2];
    run->skipped = items[3];
    /* items 4..7: source_prefix, bare_non_finite, ts_ms, rs, as change_value takes them (after data) */
    PyObject *writing_args[4] = {NULL, items[4], items[5], items[6]};
    if (read_writing(writing_args, 4, 4, "change_messages", &run->writing) < 0) return -1;
    run->rs = NULL, run->rs_length = 0;
    if (items[7] != Py_None && PyBytes_AsStringAndSize(items[7], &run->rs, &run->rs_length) < 0) return -1;
    if ((run->tombstones = PyObject_IsTrue(items[8])) < 0) return -1;
    run->no_headers = items[9], run->change_kind = items[10], run->tombstone_kind = items[11];
    return 0;
}

/* The topic of a captured collection written as it is, or NULL (no error) when the run must stop there. */
static PyObject *plain_topic(const Run *run, PyObject *db, PyObject *coll) {
    if (!PyUnicode_CheckExact(db) || !PyUnicode_CheckExact(coll)) return NULL;
    PyObject *collections = PyDict_GetItemWithError(run->topics, db);
    if (collections == NULL || !PyDict_Check(collections)) return NULL;
    PyObject *topic = PyDict_GetItemWithError(collections, coll);
    return topic != NULL && PyUnicode_CheckExact(topic) ? topic : NULL;
}

/* Appends the messages of one event; 1 when written, 0 when the run stops before it (nothing appended), -1 on
   error. `operation` is set to 'c', 'u' or 'd'. */
static int append_event_messages(const Run *run, PyObject *event, PyObject *messages, char *operation) {
    static PyObject *raw_name = NULL, *head_name = NULL;
    if (raw_name == NULL && ((raw_name = PyUnicode_InternFromString("raw")) == NULL ||
                             (head_name = PyUnicode_InternFromString("head")) == NULL))
        return -1;
    if (Py_TYPE(event) != run->event_class) return 0;
    PyObject *head = PyObject_GetAttr(event, head_name);
    if (head == NULL) return -1;
    int appended = 0;
    PyObject *raw = NULL, *topic;
    if (!PyTuple_Check(head) || PyTuple_GET_SIZE(head) != 6 || !PyUnicode_Check(PyTuple_GET_ITEM(head, 0))) goto done;
    PyObject *operation_type = PyTuple_GET_ITEM(head, 0);
    if (PyUnicode_CompareWithASCIIString(operation_type, "insert") == 0) *operation = 'c';
    else if (PyUnicode_CompareWithASCIIString(operation_type, "delete") == 0) *operation = 'd';
    else if (PyUnicode_CompareWithASCIIString(operation_type, "replace") == 0) *operation = 'u';
    else if (PyUnicode_CompareWithASCIIString(operation_type, "update") == 0) *operation = 'u';
    else goto done; /* another operation: Python's */
    if (PyUnicode_FindChar(run->skipped, *operation, 0, PyUnicode_GET_LENGTH(run->skipped), 1) != -1) goto done;
    if ((topic = plain_topic(run, PyTuple_GET_ITEM(head, 1), PyTuple_GET_ITEM(head, 2))) == NULL) {
        appended = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    if ((raw = PyObject_GetAttr(event, raw_name)) == NULL) {
        appended = -1;
        goto done;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(raw, &view, PyBUF_SIMPLE) < 0) {
        appended = -1;
        goto done;
    }
    PyObject *pair = written_change(view.buf, (size_t)view.len, &run->writing, NULL, 0, *operation == 'u', run->rs,
                                    (size_t)run->rs_length);
    PyBuffer_Release(&view);
    if (pair == NULL) {
        appended = -1;
        goto done;
    }
    if (pair == Py_None || PyTuple_GET_ITEM(pair, 1) == Py_None) { /* a key left to Python stops the run too */
        Py_DECREF(pair);
        goto done;
    }
    PyObject *message = new_message(run, topic, PyTuple_GET_ITEM(pair, 1), PyTuple_GET_ITEM(pair, 0),
                                    run->change_kind);
    PyObject *tombstone = NULL;
    if (message != NULL && *operation == 'd' && run->tombstones)
        tombstone = new_message(run, topic, PyTuple_GET_ITEM(pair, 1), Py_None, run->tombstone_kind);
    Py_DECREF(pair);
    if (message == NULL || (*operation == 'd' && run->tombstones && tombstone == NULL) ||
        PyList_Append(messages, message) < 0 || (tombstone != NULL && PyList_Append(messages, tombstone) < 0)) {
        appended = -1;
        /* a message appended before a failure is left: the caller raises, and the batch is dropped */
    } else {
        appended = 1;
    }
    Py_XDECREF(message);
    Py_XDECREF(tombstone);
done:
    Py_DECREF(head);
    Py_XDECREF(raw);
    return appended;
}

/* change_messages(events, start, writing, messages): appends the Kafka messages of events[start:] to `messages`
   while each is one this module writes whole: a RawChangeEvent insert, update, replace or delete of a collection
   in `writing`'s topics, of an operation not skipped, with a value, a key and an update description it writes. Returns (index, counts, first, last): where it stopped (the event Python must build, or len(events)), the
   events written by operation ({"c": n, ...}), and the indexes of the first and last written (-1: none).
   `writing` is (event_class, message_class, topics {db: {coll: topic}}, skipped operations as a str,
   source_prefix, bare_non_finite, ts_ms, rs, tombstones.on.delete, the messages' headers, their kind, a tombstone's
   kind): what change_value takes, and one ts_ms for the whole run. Deletes are followed by their tombstone. */
PyObject *change_messages(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 4 || !PyList_Check(args[0]) || !PyLong_Check(args[1]) || !PyList_Check(args[3])) {
        PyErr_SetString(PyExc_TypeError, "change_messages(events: list, start: int, writing: tuple, messages: list)");
        return NULL;
    }
    Run run;
    if (read_run(args[2], &run) < 0) return NULL;
    Py_ssize_t start = PyLong_AsSsize_t(args[1]);
    if (start < 0) {
        if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "change_messages: start must not be negative");
        return NULL;
    }
    Py_ssize_t index = start, first = -1, last = -1, counts[3] = {0, 0, 0};
    for (; index < PyList_GET_SIZE(args[0]); index++) {
        char operation = 0;
        int appended = append_event_messages(&run, PyList_GET_ITEM(args[0], index), args[3], &operation);
        if (appended < 0) return NULL;
        if (appended == 0) break;
        counts[operation == 'c' ? 0 : operation == 'u' ? 1 : 2]++;
        if (first < 0) first = index;
        last = index;
    }
    PyObject *by_operation = PyDict_New();
    if (by_operation == NULL) return NULL;
    static const char *const operations[3] = {"c", "u", "d"};
    for (int k = 0; k < 3; k++) {
        if (counts[k] == 0) continue;
        PyObject *count = PyLong_FromSsize_t(counts[k]);
        int failed = count == NULL || PyDict_SetItemString(by_operation, operations[k], count) < 0;
        Py_XDECREF(count);
        if (failed) {
            Py_DECREF(by_operation);
            return NULL;
        }
    }
    return Py_BuildValue("(nNnn)", index, by_operation, first, last);
}

/* update_description(data): the updateDescription block (bytes) of an update event's updateDescription document
   `data`, as envelopes.update_description_block gives it encoded; None when Python must write it. */
PyObject *update_description(PyObject *module, PyObject *argument) {
    if (!writer_ready()) {
        PyErr_SetString(PyExc_RuntimeError, "set_escape_table() was not called");
        return NULL;
    }
    Py_buffer view;
    if (PyObject_GetBuffer(argument, &view, PyBUF_SIMPLE) < 0) return NULL;
    Element element = {0x03, view.buf, (size_t)view.len};
    Buffer out = kept_description, scratch = kept_buffers[2];
    out.length = scratch.length = 0;
    Outcome outcome = is_document(view.buf, (size_t)view.len) ? put_update_description(&out, &scratch, &element)
                                                               : UNSUPPORTED;
    PyBuffer_Release(&view);
    PyObject *result = outcome == WRITTEN     ? PyBytes_FromStringAndSize(out.data, (Py_ssize_t)out.length)
                       : outcome == NO_MEMORY ? PyErr_NoMemory()
                                              : Py_NewRef(Py_None);
    keep_buffer(&kept_description, &out);
    keep_buffer(&kept_buffers[2], &scratch);
    return result;
}

/* --- Verify's rows ------------------------------------------------------------------------------------------- */

/* Whether text[0..length) is printable ASCII alone: the key's id text then escapes as orjson escapes it (only `"` and
   `\`), so the key put_key writes is also its canonical JSON (connectors/core/verify_events.py key_text). */
static int printable_ascii(const char *text, size_t length) {
    for (size_t i = 0; i < length; i++)
        if ((unsigned char)text[i] < 0x20 || (unsigned char)text[i] > 0x7E) return 0;
    return 1;
}

/* (key, after) of one document for verify_rows, or its bytes when this code leaves it to Python; NULL on error. */
static PyObject *verify_row(const unsigned char *data, size_t length, int bare, Buffer *key, Buffer *text,
                            Buffer *scratch) {
    Element document = {0x03, data, length};
    key->length = text->length = 0;
    Outcome outcome = put_key(key, scratch, &document);
    if (outcome == WRITTEN && !printable_ascii(scratch->data, scratch->length)) outcome = UNSUPPORTED;
    if (outcome == WRITTEN) outcome = put_document(text, data, length, bare);
    if (outcome == NO_MEMORY) return PyErr_NoMemory();
    if (outcome != WRITTEN) return PyBytes_FromStringAndSize((const char *)data, (Py_ssize_t)length);
    PyObject *key_text = PyUnicode_DecodeASCII(key->data, (Py_ssize_t)key->length, "strict");
    if (key_text == NULL) return NULL;
    PyObject *after = PyUnicode_DecodeUTF8(text->data, (Py_ssize_t)text->length, "strict");
    if (after == NULL) {
        Py_DECREF(key_text);
        return NULL;
    }
    PyObject *row = PyTuple_Pack(2, key_text, after);
    Py_DECREF(key_text);
    Py_DECREF(after);
    return row;
}

/* verify_rows(batch, bare_non_finite): a list with one item per document of `batch` (BSON documents one after the
   other, as a raw batch cursor gives them): (key, after), the key as canonical JSON and the document's strict Extended
   JSON (extjson.document_json), or the document's bytes when the Python path must write it (an _id of another type
   than int, string and ObjectId, a key of other than printable ASCII, a value the writer leaves to Python). None when
   the batch is not documents one after the other. */
PyObject *verify_rows(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2) {
        PyErr_SetString(PyExc_TypeError, "verify_rows(batch, bare_non_finite) takes 2 arguments");
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
    size_t length = (size_t)view.len, at = 0;
    while (at < length) {
        size_t size = length - at >= 4 ? (size_t)(uint32_t)read_int32(data + at) : 0;
        if (size < 5 || size > length - at || !is_document(data + at, size)) {
            PyBuffer_Release(&view);
            Py_RETURN_NONE;
        }
        at += size;
    }
    PyObject *rows = PyList_New(0);
    Buffer key, text, scratch;
    take_buffers(&text, &key, &scratch);
    for (at = 0; rows != NULL && at < length;) {
        size_t size = (size_t)(uint32_t)read_int32(data + at);
        PyObject *row = verify_row(data + at, size, bare, &key, &text, &scratch);
        if (row == NULL || PyList_Append(rows, row) < 0) Py_CLEAR(rows);
        Py_XDECREF(row);
        at += size;
    }
    keep_buffer(&kept_buffers[0], &text);
    keep_buffer(&kept_buffers[1], &key);
    keep_buffer(&kept_buffers[2], &scratch);
    PyBuffer_Release(&view);
    return rows;
}
