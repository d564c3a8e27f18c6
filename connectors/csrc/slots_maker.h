/* A maker of a slotted class's instances (slots_maker), shared by the C extensions: scripts/build_extensions.py puts
   this directory on the include path of each. Static: each module has its own copy of the type, readied in its
   module init (PyType_Ready(&MakerType)). */

#ifndef CDC_SLOTS_MAKER_H
#define CDC_SLOTS_MAKER_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>

/* A maker of one slotted class's instances: its slots set from the arguments in order, no __init__ run (a slotted
   dataclass's generated __init__ costs 0.2 µs for five fields; this, about 0.05). */
#define MAKER_SLOTS 8
typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyTypeObject *type;
    Py_ssize_t count;
    Py_ssize_t offsets[MAKER_SLOTS];
} Maker;

static PyObject *maker_call(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    Maker *maker = (Maker *)self;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (nargs != maker->count || (kwnames != NULL && PyTuple_GET_SIZE(kwnames))) {
        return PyErr_Format(PyExc_TypeError, "%s maker takes %zd positional arguments (%zd given)",
                            maker->type->tp_name, maker->count, nargs);
    }
    PyObject *made = maker->type->tp_alloc(maker->type, 0);
    if (made == NULL) return NULL;
    for (Py_ssize_t i = 0; i < nargs; i++) *(PyObject **)((char *)made + maker->offsets[i]) = Py_NewRef(args[i]);
    return made;
}

static void maker_dealloc(PyObject *self) {
    Py_XDECREF(((Maker *)self)->type);
    PyObject_Free(self);
}

static PyTypeObject MakerType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "slots_maker.Maker",
    .tp_basicsize = sizeof(Maker),
    .tp_dealloc = maker_dealloc,
    .tp_vectorcall_offset = offsetof(Maker, vectorcall),
    .tp_call = PyVectorcall_Call,
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_doc = "makes instances of a slotted class from its slots' values",
};

/* slots_maker(cls, names) -> maker: maker(*values) is an instance of `cls` whose slots `names` hold `values` (as
   cls(*values) makes it, for a slotted dataclass with these fields and no __post_init__); each name must be a
   writable object slot of `cls` (at most 8). */
static PyObject *slots_maker(PyObject *module, PyObject *const *args, Py_ssize_t nargs) {
    if (nargs != 2 || !PyType_Check(args[0]) || !PyTuple_Check(args[1])) {
        PyErr_SetString(PyExc_TypeError, "slots_maker(cls, names) takes a class and a tuple of slot names");
        return NULL;
    }
    PyTypeObject *type = (PyTypeObject *)args[0];
    Py_ssize_t count = PyTuple_GET_SIZE(args[1]);
    if (count > MAKER_SLOTS || type->tp_alloc == NULL) {
        return PyErr_Format(PyExc_ValueError, "slots_maker: %s has more than %d slots or no allocator", type->tp_name,
                            MAKER_SLOTS);
    }
    Maker *maker = PyObject_New(Maker, &MakerType);
    if (maker == NULL) return NULL;
    maker->vectorcall = maker_call;
    maker->type = (PyTypeObject *)Py_NewRef(type);
    maker->count = count;
    for (Py_ssize_t i = 0; i < count; i++) {
        PyObject *descriptor = PyObject_GetAttr(args[0], PyTuple_GET_ITEM(args[1], i));
        if (descriptor == NULL) goto failed;
        int usable = Py_IS_TYPE(descriptor, &PyMemberDescr_Type) &&
                     PyType_IsSubtype(type, ((PyMemberDescrObject *)descriptor)->d_common.d_type) &&
                     ((PyMemberDescrObject *)descriptor)->d_member->type == T_OBJECT_EX &&
                     !(((PyMemberDescrObject *)descriptor)->d_member->flags & READONLY);
        if (usable) maker->offsets[i] = ((PyMemberDescrObject *)descriptor)->d_member->offset;
        Py_DECREF(descriptor);
        if (!usable) {
            PyErr_Format(PyExc_ValueError, "slots_maker: %R is no writable object slot of %s",
                         PyTuple_GET_ITEM(args[1], i), type->tp_name);
            goto failed;
        }
    }
    return (PyObject *)maker;
failed:
    Py_DECREF(maker);
    return NULL;
}

#endif
