/* The helpers' front: a call the original serves anyway is passed to it from C.
 *
 * A helper's Python function (``._ufunc.make_function``, ``._binary._make_function``) decides every
 * call, but most calls in real programs are small: a Python float in a ``quad`` integrand, an array of
 * a thousand elements in a loop.  Those take the original whatever the profile says, and the Python
 * function costs them ~0.2-0.5 µs: its own frame, and the error-state redirect that makes NumPy's
 * warnings name the caller's line rather than the helper's.
 *
 * A Front is the public helper where this module is built.  It passes a call to the original, with
 * the caller's exact arguments (vectorcall: nothing is copied), when the original serves it under
 * the Python function's own rules, and hands every other call to the Python function:
 *
 * - a scalar of a type NumPy converts itself (``scalars``: Python and NumPy numbers, ...) as the first
 *   argument: the Python function always calls the original for those;
 * - an exact ``numpy.ndarray`` (each operand, for a two-argument helper) whose size is below the floor
 *   of its dtype (``floors``, the Python function's own table; a dtype without one yet goes to the
 *   Python function, which learns it), or below the settings' fixed gate when one is set
 *   (``np2torch.runtime.using``, ``configure``).  A two-argument helper bounds the broadcast size by
 *   the product of the operands' sizes, its floors being kept under the operands' dtype pair.
 *
 * A C function runs no Python frame of its own, so the original sees exactly the caller's call:
 * its warnings name the caller's line, ``np.errstate`` (the caller's context) applies, an exception's
 * traceback shows no helper.  That is what the Python function's redirect reproduces; here it is the
 * call itself.
 *
 * Past the floor, a plain call of a known size that the helper's ledger (``._decision.ledger``) holds is
 * passed too, its saving added to the rental's sum: the call the Python function would count and give the
 * original, under the ledger's own conditions (the main thread, torch not imported, the same settings, the
 * sum staying under the rental's threshold), read here from the ledger and ``PROCESS``.  Nothing is decided here that the Python function does not decide the same way:
 * tests/runtime/test_runtime_front.py runs both on the same calls.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stddef.h>
#include <structmember.h>

#ifdef Py_GIL_DISABLED
/* The floors and the settings are read without a lock, as the GIL allows; a free-threaded build keeps
   the Python function (setup.py builds this module optionally). */
#error "np2torch.runtime._front is not built for a free-threaded interpreter"
#endif

typedef struct {
    PyObject_HEAD
    vectorcallfunc vectorcall;
    PyObject *python;    /* the helper's Python function: every call not passed through */
    PyObject *original;  /* the original, once imported; NULL until then (every call goes to python) */
    PyObject *floors;    /* dict: an input dtype (the loop's, for two operands) -> the floor */
    PyObject *loops;     /* two operands: dict (dtype or type, dtype or type) -> loop dtype or None; else None */
    PyObject *scoped;    /* ContextVar: the settings of the innermost `using` block, or None */
    PyObject *process;   /* ._state.PROCESS: its .settings when no block is in force */
    PyObject *ndarray;   /* numpy.ndarray */
    PyObject *scalars;   /* frozenset of the types passed through as a first argument */
    PyObject *ledger;    /* the helper's ._decision.ledger.Ledger, or NULL: no call past the floor is passed */
    PyObject *dict;      /* __name__, __doc__, __signature__, ... */
    int nin;             /* 1 or 2 */
    int floats;          /* whether float is one of the scalars */
} Front;

#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *
Py_NewRef(PyObject *o)
{
    Py_INCREF(o);
    return o;
}
#endif

#define HALF_MAX 65504.0  /* the largest finite float16 (._exact.errstate.HALF_MAX) */

static PyObject *str_settings, *str_gate, *str_dtype, *str_size, *str_shape;
static PyObject *str_entries, *str_threshold, *str_main, *str_saved, *str_torch_tried, *str_torch_found, *str_torch;

/* The size of array ``x`` and, when ``dtype`` is not NULL, its dtype (a new reference): -1 on an error. */
static Py_ssize_t
array_size(PyObject *x, PyObject **dtype)
{
    PyObject *size = PyObject_GetAttr(x, str_size);
    if (size == NULL) {
        return -1;
    }
    Py_ssize_t n = PyLong_AsSsize_t(size);
    Py_DECREF(size);
    if (n < 0) {
        return -1;
    }
    if (dtype != NULL) {
        *dtype = PyObject_GetAttr(x, str_dtype);
        if (*dtype == NULL) {
            return -1;
        }
    }
    return n;
}

/* The settings in force (a new reference), NULL on an error. */
static PyObject *
settings_now(Front *self)
{
    PyObject *settings;
    if (PyContextVar_Get(self->scoped, NULL, &settings) < 0) {
        return NULL;
    }
    if (settings == Py_None) {
        Py_DECREF(settings);
        settings = PyObject_GetAttr(self->process, str_settings);
    }
    return settings;
}

/* The gate of the settings in force (a new reference: None, or the fixed size gate), NULL on an error. */
static PyObject *
settings_gate(Front *self)
{
    PyObject *settings = settings_now(self);
    if (settings == NULL) {
        return NULL;
    }
    PyObject *gate = PyObject_GetAttr(settings, str_gate);
    Py_DECREF(settings);
    return gate;
}

/* Whether ``n`` elements keyed ``key`` in the floors lie below the floor (or the fixed gate): 1 yes, 0 no
   (or no floor learned yet), -1 on an error. */
static int
below(Front *self, Py_ssize_t n, PyObject *key)
{
    PyObject *gate = settings_gate(self);
    if (gate == NULL) {
        return -1;
    }
    PyObject *floor = gate;
    if (gate == Py_None) {
        floor = PyDict_GetItemWithError(self->floors, key);  /* borrowed */
        if (floor == NULL) {
            Py_DECREF(gate);
            return PyErr_Occurred() ? -1 : 0;  /* no floor yet: the Python function learns it */
        }
    }
    Py_ssize_t value = PyLong_AsSsize_t(floor);
    Py_DECREF(gate);
    if (value == -1 && PyErr_Occurred()) {
        return -1;
    }
    return n < value;
}

/* A float attribute of ``owner`` as a C double: 0 on success, -1 on an error. */
static int
double_attr(PyObject *owner, PyObject *name, double *value)
{
    PyObject *found = PyObject_GetAttr(owner, name);
    if (found == NULL) {
        return -1;
    }
    *value = PyFloat_AsDouble(found);
    Py_DECREF(found);
    return *value == -1.0 && PyErr_Occurred() ? -1 : 0;
}

/* Whether the ledger's conditions hold in this thread now: 1 yes, 0 no, -1 on an error. */
static int
ledger_open(Front *self)
{
    PyObject *main = PyObject_GetAttr(self->ledger, str_main);
    if (main == NULL) {
        return -1;
    }
    unsigned long ident = main == Py_None ? 0 : PyLong_AsUnsignedLong(main);
    Py_DECREF(main);
    if (ident == (unsigned long)-1 && PyErr_Occurred()) {
        return -1;
    }
    if (ident == 0 || ident != PyThread_get_thread_ident()) {
        return 0;  /* another thread than the one the entries were written in, the main one */
    }
    PyObject *tried = PyObject_GetAttr(self->process, str_torch_tried);
    if (tried == NULL) {
        return -1;
    }
    int was_tried = PyObject_IsTrue(tried);
    Py_DECREF(tried);
    if (was_tried < 0) {
        return -1;
    }
    if (was_tried) {  /* open only if torch was found missing for good */
        PyObject *found = PyObject_GetAttr(self->process, str_torch_found);
        if (found == NULL) {
            return -1;
        }
        int is_found = PyObject_IsTrue(found);
        Py_DECREF(found);
        return is_found < 0 ? -1 : !is_found;
    }
    PyObject *torch = PyDict_GetItemWithError(PyImport_GetModuleDict(), str_torch);  /* borrowed */
    if (torch != NULL) {
        return 0;  /* imported by the program, or being imported */
    }
    return PyErr_Occurred() ? -1 : 1;
}

/* Whether the helper's ledger holds the plain call over ``n`` elements keyed ``key`` (input dtype, or the
   operands' loop) under the settings in force: then its saving is added to the rental's sum, as
   ``Ledger.count`` adds it, and 1 is returned; 0 when the Python function decides; -1 on an error. */
static int
counted(Front *self, PyObject *key, Py_ssize_t n)
{
    if (self->ledger == NULL || self->ledger == Py_None) {
        return 0;
    }
    int result = -1;
    PyObject *settings = NULL, *owner = NULL, *entries = NULL, *entry = NULL;
    /* The entry first: a call the ledger does not hold (one torch or the cores take) pays one lookup. */
    entries = PyObject_GetAttr(self->ledger, str_entries);
    entry = entries == NULL ? NULL : Py_BuildValue("(On)", key, n);
    if (entry == NULL) {
        goto done;
    }
    PyObject *saving = PyDict_GetItemWithError(entries, entry);  /* borrowed */
    if (saving == NULL) {
        result = PyErr_Occurred() ? -1 : 0;
        goto done;
    }
    Py_INCREF(saving);  /* (the conditions below run Python-level lookups: keep it alive) */
    int open = ledger_open(self);
    settings = open == 1 ? settings_now(self) : NULL;
    owner = settings == NULL ? NULL : PyObject_GetAttr(self->ledger, str_settings);
    if (owner == NULL || owner != settings) {
        Py_DECREF(saving);
        result = open == 0 || (owner != NULL && owner != settings) ? 0 : -1;
        goto done;
    }
    double value = PyFloat_AsDouble(saving), threshold, saved;
    Py_DECREF(saving);
    if (value == -1.0 && PyErr_Occurred()) {
        goto done;
    }
    if (value != 0.0) {
        if (double_attr(self->ledger, str_threshold, &threshold) < 0 || double_attr(self->process, str_saved, &saved) < 0) {
            goto done;
        }
        double total = saved + value;
        if (!(total < threshold)) {
            result = 0;  /* this call imports torch: the Python function decides it */
            goto done;
        }
        PyObject *sum = PyFloat_FromDouble(total);
        if (sum == NULL || PyObject_SetAttr(self->process, str_saved, sum) < 0) {
            Py_XDECREF(sum);
            goto done;
        }
        Py_DECREF(sum);
    }
    result = 1;
done:
    Py_XDECREF(settings);
    Py_XDECREF(owner);
    Py_XDECREF(entries);
    Py_XDECREF(entry);
    return result;
}

/* One argument: 1 when the original serves the call whatever the profile says, or because the array lies
   below its floor (or the ledger holds it); 0 when the Python function decides; -1 on an error (the Python
   function then decides). */
static int
passes_one(Front *self, PyObject *x)
{
    PyTypeObject *kind = Py_TYPE(x);
    if ((PyObject *)kind != self->ndarray) {
        /* (a Python float, the commonest scalar, without the set's lookup) */
        return (kind == &PyFloat_Type && self->floats) || PySet_Contains(self->scalars, (PyObject *)kind);
    }
    PyObject *dtype;
    Py_ssize_t n = array_size(x, &dtype);
    if (n < 0) {
        return -1;
    }
    int result = below(self, n, dtype);
    if (result == 0) {
        result = counted(self, dtype, n);
    }
    Py_DECREF(dtype);
    return result;
}

/* One operand of two: its size (1 for a scalar) and its key in the loop table (the array's dtype or the
   scalar's type, a new reference); 0 when the Python function decides, -1 on an error. */
static int
operand(Front *self, PyObject *x, Py_ssize_t *n, PyObject **key)
{
    PyTypeObject *kind = Py_TYPE(x);
    if ((PyObject *)kind == self->ndarray) {
        *n = array_size(x, key);
        return *n < 0 ? -1 : 1;
    }
    /* A Python float or int no cast can overflow, the loop NumPy 1's value-based casting picks for it
       being the one NumPy 2 picks (as the Python function's hot path requires). */
    double value;
    if (kind == &PyFloat_Type) {
        value = PyFloat_AS_DOUBLE(x);
    }
    else if (kind == &PyLong_Type) {
        value = PyLong_AsDouble(x);
        if (value == -1.0 && PyErr_Occurred()) {
            return -1;
        }
    }
    else {
        return 0;
    }
    if (!(value >= -HALF_MAX && value <= HALF_MAX)) {
        return 0;
    }
    *n = 1;
    *key = Py_NewRef((PyObject *)kind);
    return 1;
}

/* Two operands, as ``passes_one``: below the floor of their loop, bounding the broadcast size. */
static int
passes_two(Front *self, PyObject *x1, PyObject *x2)
{
    int arrays = ((PyObject *)Py_TYPE(x1) == self->ndarray) + ((PyObject *)Py_TYPE(x2) == self->ndarray);
    if (arrays == 0) {
        return 0;
    }
    Py_ssize_t n1, n2;
    PyObject *k1 = NULL, *k2 = NULL, *pair = NULL;
    int result = operand(self, x1, &n1, &k1);
    if (result != 1) {
        goto done;
    }
    result = operand(self, x2, &n2, &k2);
    if (result != 1) {
        goto done;
    }
    result = -1;
    pair = PyTuple_Pack(2, k1, k2);
    if (pair == NULL) {
        goto done;
    }
    PyObject *loop = PyDict_GetItemWithError(self->loops, pair);  /* borrowed */
    if (loop == NULL) {
        result = PyErr_Occurred() ? -1 : 0;  /* not resolved yet: the Python function resolves it */
        goto done;
    }
    if (loop == Py_None) {  /* resolved before: no loop torch serves */
        result = 1;
        goto done;
    }
    /* Broadcasting makes at most n1 * n2 elements; exactly n1 for equal shapes. */
    Py_ssize_t n;
    int same = n1 == n2;
    if (same && arrays == 2) {
        PyObject *s1 = PyObject_GetAttr(x1, str_shape);
        PyObject *s2 = s1 == NULL ? NULL : PyObject_GetAttr(x2, str_shape);
        same = s2 == NULL ? -1 : PyObject_RichCompareBool(s1, s2, Py_EQ);
        Py_XDECREF(s1);
        Py_XDECREF(s2);
        if (same < 0) {
            goto done;
        }
    }
    if (same) {
        n = n1;
    }
    else if (n2 != 0 && n1 > PY_SSIZE_T_MAX / n2) {
        result = 0;
        goto done;
    }
    else {
        n = n1 * n2;
    }
    result = below(self, n, loop);
    if (result == 0 && (same || n1 == 1 || n2 == 1)) {  /* a known size: n */
        result = counted(self, loop, n);
    }
done:
    Py_XDECREF(k1);
    Py_XDECREF(k2);
    Py_XDECREF(pair);
    return result;
}

static PyObject *
front_vectorcall(PyObject *callable, PyObject *const *args, size_t nargsf, PyObject *kwnames)
{
    Front *self = (Front *)callable;
    Py_ssize_t nargs = PyVectorcall_NARGS(nargsf);
    if (self->original != NULL) {
        int passed;
        if (self->nin == 1) {
            passed = nargs == 0 || passes_one(self, args[0]);
        }
        else {
            /* anything but two operands alone: the original, which the Python function calls then too */
            passed = nargs != 2 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames)) || passes_two(self, args[0], args[1]);
        }
        if (passed == 1) {
            return PyObject_Vectorcall(self->original, args, nargsf, kwnames);
        }
        if (passed < 0) {
            PyErr_Clear();
        }
    }
    return PyObject_Vectorcall(self->python, args, nargsf, kwnames);
}

static PyObject *
front_new(PyTypeObject *type, PyObject *args, PyObject *kwargs)
{
    static char *names[] = {"python", "floors", "loops", "scoped", "process", "ndarray", "scalars", NULL};
    PyObject *python, *floors, *loops, *scoped, *process, *ndarray, *scalars;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO!OOOO!O!:Front", names, &python, &PyDict_Type, &floors,
                                     &loops, &scoped, &process, &PyType_Type, &ndarray, &PyFrozenSet_Type,
                                     &scalars)) {
        return NULL;
    }
    if (!PyCallable_Check(python) || !PyContextVar_CheckExact(scoped) || (loops != Py_None && !PyDict_Check(loops))) {
        PyErr_SetString(PyExc_TypeError, "Front(python, floors, loops, scoped, process, ndarray, scalars): python "
                                         "callable, floors a dict, loops a dict or None, scoped a ContextVar");
        return NULL;
    }
    Front *self = (Front *)type->tp_alloc(type, 0);
    if (self == NULL) {
        return NULL;
    }
    self->vectorcall = front_vectorcall;
    self->python = Py_NewRef(python);
    self->original = NULL;
    self->floors = Py_NewRef(floors);
    self->loops = Py_NewRef(loops);
    self->scoped = Py_NewRef(scoped);
    self->process = Py_NewRef(process);
    self->ndarray = Py_NewRef(ndarray);
    self->scalars = Py_NewRef(scalars);
    self->ledger = NULL;
    self->dict = NULL;
    self->nin = loops == Py_None ? 1 : 2;
    self->floats = PySet_Contains(scalars, (PyObject *)&PyFloat_Type);
    if (self->floats < 0) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static int
front_traverse(Front *self, visitproc visit, void *arg)
{
    Py_VISIT(self->python);
    Py_VISIT(self->original);
    Py_VISIT(self->floors);
    Py_VISIT(self->loops);
    Py_VISIT(self->scoped);
    Py_VISIT(self->process);
    Py_VISIT(self->ndarray);
    Py_VISIT(self->scalars);
    Py_VISIT(self->ledger);
    Py_VISIT(self->dict);
    return 0;
}

static int
front_clear(Front *self)
{
    Py_CLEAR(self->python);
    Py_CLEAR(self->original);
    Py_CLEAR(self->floors);
    Py_CLEAR(self->loops);
    Py_CLEAR(self->scoped);
    Py_CLEAR(self->process);
    Py_CLEAR(self->ndarray);
    Py_CLEAR(self->scalars);
    Py_CLEAR(self->ledger);
    Py_CLEAR(self->dict);
    return 0;
}

static void
front_dealloc(Front *self)
{
    PyObject_GC_UnTrack(self);
    front_clear(self);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyObject *
front_repr(Front *self)
{
    return PyObject_Repr(self->python);
}

static PyObject *
get_original(Front *self, void *closure)
{
    return Py_NewRef(self->original != NULL ? self->original : Py_None);
}

static int
set_original(Front *self, PyObject *value, void *closure)
{
    if (value == NULL || value == Py_None) {
        Py_CLEAR(self->original);
        return 0;
    }
    if (!PyCallable_Check(value)) {
        PyErr_SetString(PyExc_TypeError, "Front.original: a callable or None");
        return -1;
    }
    Py_XSETREF(self->original, Py_NewRef(value));
    return 0;
}

static PyObject *
get_python(Front *self, void *closure)
{
    return Py_NewRef(self->python);
}

static PyGetSetDef front_getset[] = {
    {"original", (getter)get_original, (setter)set_original,
     "The original the front passes calls to (None: every call goes to the Python function).", NULL},
    {"python", (getter)get_python, NULL, "The helper's Python function, which decides every other call.", NULL},
    {"__dict__", PyObject_GenericGetDict, PyObject_GenericSetDict, NULL, NULL},
    {NULL}
};

static PyMemberDef front_members[] = {
    {"ledger", T_OBJECT, offsetof(Front, ledger), 0,
     "The helper's ledger of plain calls past the floor that take the original (None: none is passed)."},
    {NULL}
};

static PyObject *
front_reduce(Front *self, PyObject *unused)
{
    /* pickled by reference, as a function is: np2torch.runtime.<name> */
    return PyObject_GetAttrString((PyObject *)self, "__qualname__");
}

static PyMethodDef front_methods[] = {
    {"__reduce__", (PyCFunction)front_reduce, METH_NOARGS, NULL},
    {NULL}
};

static PyTypeObject FrontType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "np2torch.runtime._front.Front",
    .tp_doc = "A helper's front: calls the original serves anyway go to it from C, every other call to the "
              "helper's Python function.",
    .tp_basicsize = sizeof(Front),
    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .tp_new = front_new,
    .tp_dealloc = (destructor)front_dealloc,
    .tp_traverse = (traverseproc)front_traverse,
    .tp_clear = (inquiry)front_clear,
    .tp_repr = (reprfunc)front_repr,
    .tp_call = PyVectorcall_Call,
    .tp_vectorcall_offset = offsetof(Front, vectorcall),
    .tp_dictoffset = offsetof(Front, dict),
    .tp_getset = front_getset,
    .tp_members = front_members,
    .tp_methods = front_methods,
};

static struct PyModuleDef front_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_front",
    .m_doc = "The helpers' front: calls the original serves anyway are passed to it from C.",
    .m_size = -1,
};

PyMODINIT_FUNC
PyInit__front(void)
{
    if ((str_settings = PyUnicode_InternFromString("settings")) == NULL
        || (str_gate = PyUnicode_InternFromString("gate")) == NULL
        || (str_dtype = PyUnicode_InternFromString("dtype")) == NULL
        || (str_size = PyUnicode_InternFromString("size")) == NULL
        || (str_shape = PyUnicode_InternFromString("shape")) == NULL
        || (str_entries = PyUnicode_InternFromString("entries")) == NULL
        || (str_threshold = PyUnicode_InternFromString("threshold")) == NULL
        || (str_main = PyUnicode_InternFromString("main")) == NULL
        || (str_saved = PyUnicode_InternFromString("saved")) == NULL
        || (str_torch_tried = PyUnicode_InternFromString("torch_tried")) == NULL
        || (str_torch_found = PyUnicode_InternFromString("torch_found")) == NULL
        || (str_torch = PyUnicode_InternFromString("torch")) == NULL
        || PyType_Ready(&FrontType) < 0) {
        return NULL;
    }
    PyObject *module = PyModule_Create(&front_module);
    if (module == NULL) {
        return NULL;
    }
    if (PyModule_AddObject(module, "Front", Py_NewRef((PyObject *)&FrontType)) < 0) {
        Py_DECREF(&FrontType);
        Py_DECREF(module);
        return NULL;
    }
    return module;
}
