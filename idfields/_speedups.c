/*
 * The compiled hot paths of idfields' generators and of the SQLAlchemy ID default.
 *
 * CounterCore is the base type of CounterGenerator (DecimalId, runid) and TimeCore, which
 * extends it, of TimeGenerator, when this extension is built. They hold the generator's counters
 * as C members (readable and writable from Python under the same names as the pure-Python
 * reference, idfields/generators/hotpath.py) and implement __call__ for the one case that
 * matters for speed: the next ID of the current block (a tick is a block the clock starts), or,
 * for TimeCore, the first ID of a new tick. Everything else (first use, a used-up block, a node
 * to take, running ahead, waiting, a lease to renew, close(), errors) goes to the Python method
 * _locked_issue(), which takes the generator's lock and decides afresh under it (TimeCore's
 * clock reading is old once the lock is free).
 *
 * Thread safety: the fast path runs entirely while holding the GIL and calls no Python code
 * after reading the clock, so it is atomic with respect to other threads. While a Python method
 * changes the counters under the lock it sets _busy, and the fast path then takes the slow way
 * (and so waits for the lock). It needs the GIL: the module says so (Py_mod_gil), and setup.py
 * does not build it for free-threaded CPython.
 *
 * SlotDefault is the per-row column default of idfields.sqlalchemy_ext (the compiled twin of
 * registry.context_default): SQLAlchemy calls it with its execution context, which it ignores,
 * and it calls the source the registry bound as the slot's "call" attribute (or the slot's own
 * call(), which binds one), and slot.after_closed() when that source was closed under its feet
 * (GeneratorClosed): no Python frame of its own on the path of every row.
 *
 * Forks: a child must never go on with its parent's counters. Every fork, however it is made
 * (os.fork, fork(2) from C, glibc's _Fork(), a raw clone system call), gives the child a zeroed
 * copy of the MADV_WIPEONFORK page idfields/_forking.py maps as its `live` mark: at-fork
 * handlers (Python's or pthread_atfork's) are skipped by _Fork() and raw clones, the kernel's
 * wipe is not. Each core keeps a pointer to its interpreter's mark and serves the fast path
 * only while it reads true, that is once the fork hooks ran in this process (they mark every
 * generator stale first); else the slow path adopts the fork and claims anew or refuses, as the
 * pure core does. TimeCore reads it after the clock, which may be Python code that forks.
 *
 * Module state: the mark (a held buffer of _forking.live, which keeps the page mapped), the
 * native clock and the slow path's name. The clock is a property that refuses deletion and
 * non-callables, and is called through a strong reference (it may replace itself while it runs).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <structmember.h>
#include <time.h>

typedef struct {
    PyObject_HEAD
    long long left;  /* IDs left in the block; 0 sends every call to the slow path */
    long long id;    /* the last ID issued */
    long long step;
    int busy;
    volatile const char *live;  /* the fork mark: 0 in a child until its fork hooks ran */
} CounterCore;

typedef struct {
    CounterCore base;
    long long tick;
    long long epoch_ns;
    long long unit_ns;
    long long skew_ticks;
    long long limit_tick;
    long long node_base;
    long long modulus;
    long long tick_mul;
    long long per_block;
    int native;       /* the clock is time.time_ns: read with clock_gettime instead */
    PyObject *clock;  /* never NULL after construction */
} TimeCore;

typedef struct {
    Py_buffer live;       /* idfields._forking.live: one byte of the wiped page */
    PyObject *time_ns;    /* time.time_ns, recognised as the native clock */
    PyObject *slow_name;  /* "_locked_issue" */
} ModuleState;

static struct PyModuleDef speedups_module;

static ModuleState *state_of_type(PyTypeObject *type) {
    PyObject *module = PyType_GetModuleByDef(type, &speedups_module);
    return module == NULL ? NULL : (ModuleState *)PyModule_GetState(module);
}

static long long floor_div(long long a, long long b) {
    long long q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) {
        q -= 1;
    }
    return q;
}

static long long floor_mod(long long a, long long b) {
    long long r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) {
        r += b;
    }
    return r;
}

static int read_clock(TimeCore *self, long long *now) {
    if (self->native) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        *now = (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
        return 0;
    }
    if (self->clock == NULL) {  /* only after tp_clear, when the generator is being collected */
        PyErr_SetString(PyExc_AttributeError, "the generator's clock is gone");
        return -1;
    }
    PyObject *clock = Py_NewRef(self->clock);  /* the call may replace self->clock */
    PyObject *value = PyObject_CallNoArgs(clock);
    Py_DECREF(clock);
    if (value == NULL) {
        return -1;
    }
    *now = PyLong_AsLongLong(value);
    Py_DECREF(value);
    return (*now == -1 && PyErr_Occurred()) ? -1 : 0;
}

static int refuse_arguments(PyObject *args, PyObject *kwargs) {
    if ((args != NULL && PyTuple_GET_SIZE(args) != 0) || (kwargs != NULL && PyDict_GET_SIZE(kwargs) != 0)) {
        PyErr_SetString(PyExc_TypeError, "a generator takes no arguments; use take(n) for n IDs");
        return -1;
    }
    return 0;
}

/* The next ID of the current block; the caller checked that one is left. */
static PyObject *next_in_block(CounterCore *core) {
    core->left -= 1;
    core->id += core->step;
    return PyLong_FromLongLong(core->id);
}

/* Every call the fast path does not serve: the generator's _locked_issue(), under its lock. */
static PyObject *slow_path(PyObject *op) {
    ModuleState *state = state_of_type(Py_TYPE(op));
    if (state == NULL) {
        return NULL;
    }
    return PyObject_CallMethodNoArgs(op, state->slow_name);
}

static PyObject *CounterCore_call(PyObject *op, PyObject *args, PyObject *kwargs) {
    CounterCore *self = (CounterCore *)op;
    if (refuse_arguments(args, kwargs) < 0) {
        return NULL;
    }
    if (!self->busy && *self->live && self->left > 0) {
        return next_in_block(self);
    }
    return slow_path(op);
}

static PyObject *TimeCore_call(PyObject *op, PyObject *args, PyObject *kwargs) {
    TimeCore *self = (TimeCore *)op;
    CounterCore *core = &self->base;
    if (refuse_arguments(args, kwargs) < 0) {
        return NULL;
    }
    long long now;
    if (read_clock(self, &now) < 0) {
        return NULL;
    }
    /* No Python code runs from here until the return or the slow call: atomic under the GIL. */
    long long tick = floor_div(now - self->epoch_ns, self->unit_ns);
    if (!core->busy && *core->live) {
        if (tick > self->tick) {
            if (tick <= self->limit_tick) {
                self->tick = tick;
                core->left = self->per_block - 1;
                core->id = self->node_base + floor_mod(tick, self->modulus) * self->tick_mul;
                return PyLong_FromLongLong(core->id);
            }
        }
        else if (core->left > 0 && tick + self->skew_ticks >= self->tick) {
            return next_in_block(core);
        }
    }
    return slow_path(op);
}

static PyObject *TimeCore_get_clock(TimeCore *self, void *closure) {
    if (self->clock == NULL) {
        PyErr_SetString(PyExc_AttributeError, "the generator's clock is gone");
        return NULL;
    }
    return Py_NewRef(self->clock);
}

static int TimeCore_set_clock(TimeCore *self, PyObject *value, void *closure) {
    if (value == NULL) {
        PyErr_SetString(PyExc_AttributeError, "a generator's clock cannot be deleted; assign another callable");
        return -1;
    }
    if (!PyCallable_Check(value)) {
        PyErr_Format(PyExc_TypeError, "a generator's clock must be callable (returning ns since 1970), not %R", value);
        return -1;
    }
    ModuleState *state = state_of_type(Py_TYPE(self));
    if (state == NULL) {
        return -1;
    }
    /* Swap before dropping the old clock: its finaliser may run Python code that calls us. */
    PyObject *old = self->clock;
    self->clock = Py_NewRef(value);
    self->native = value == state->time_ns;
    Py_XDECREF(old);
    return 0;
}

static int TimeCore_traverse(TimeCore *self, visitproc visit, void *arg) {
    Py_VISIT(self->clock);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int TimeCore_clear(TimeCore *self) {
    self->native = 0;
    Py_CLEAR(self->clock);
    return 0;
}

static void TimeCore_dealloc(TimeCore *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    TimeCore_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

/* A core of either type, watching its interpreter's fork mark. */
static CounterCore *core_alloc(PyTypeObject *type, ModuleState *state) {
    CounterCore *self = (CounterCore *)type->tp_alloc(type, 0);
    if (self != NULL) {
        self->step = 1;
        self->live = (volatile const char *)state->live.buf;
    }
    return self;
}

static PyObject *CounterCore_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    ModuleState *state = state_of_type(type);
    return state == NULL ? NULL : (PyObject *)core_alloc(type, state);
}

static PyObject *TimeCore_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    ModuleState *state = state_of_type(type);
    if (state == NULL) {
        return NULL;
    }
    TimeCore *self = (TimeCore *)core_alloc(type, state);
    if (self == NULL) {
        return NULL;
    }
    self->unit_ns = 1;
    self->modulus = 1;
    self->per_block = 1;
    self->clock = Py_NewRef(state->time_ns);
    self->native = 1;
    return (PyObject *)self;
}

static void CounterCore_dealloc(PyObject *self) {
    PyTypeObject *type = Py_TYPE(self);
    type->tp_free(self);
    Py_DECREF(type);
}

static PyMemberDef CounterCore_members[] = {
    {"_left", T_LONGLONG, offsetof(CounterCore, left), 0, NULL},
    {"_id", T_LONGLONG, offsetof(CounterCore, id), 0, NULL},
    {"_step", T_LONGLONG, offsetof(CounterCore, step), 0, NULL},
    {"_busy", T_INT, offsetof(CounterCore, busy), 0, NULL},
    {NULL},
};

static PyType_Slot CounterCore_slots[] = {
    {Py_tp_doc, "Compiled hot path of CounterGenerator (see idfields/_speedups.c)."},
    {Py_tp_new, CounterCore_new},
    {Py_tp_call, CounterCore_call},
    {Py_tp_members, CounterCore_members},
    {Py_tp_dealloc, CounterCore_dealloc},
    {0, NULL},
};

static PyType_Spec CounterCore_spec = {
    .name = "idfields._speedups.CounterCore",
    .basicsize = sizeof(CounterCore),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,
    .slots = CounterCore_slots,
};

/* TimeCore's own members; _left, _id, _step and _busy are CounterCore's. */
static PyMemberDef TimeCore_members[] = {
    {"_tick", T_LONGLONG, offsetof(TimeCore, tick), 0, NULL},
    {"_epoch_ns", T_LONGLONG, offsetof(TimeCore, epoch_ns), 0, NULL},
    {"_unit_ns", T_LONGLONG, offsetof(TimeCore, unit_ns), 0, NULL},
    {"_skew_ticks", T_LONGLONG, offsetof(TimeCore, skew_ticks), 0, NULL},
    {"_limit_tick", T_LONGLONG, offsetof(TimeCore, limit_tick), 0, NULL},
    {"_node_base", T_LONGLONG, offsetof(TimeCore, node_base), 0, NULL},
    {"_modulus", T_LONGLONG, offsetof(TimeCore, modulus), 0, NULL},
    {"_tick_mul", T_LONGLONG, offsetof(TimeCore, tick_mul), 0, NULL},
    {"_per_block", T_LONGLONG, offsetof(TimeCore, per_block), 0, NULL},
    {NULL},
};

static PyGetSetDef TimeCore_getset[] = {
    {"_clock", (getter)TimeCore_get_clock, (setter)TimeCore_set_clock, "The wall clock (ns since 1970).", NULL},
    {NULL},
};

static PyType_Slot TimeCore_slots[] = {
    {Py_tp_doc, "Compiled hot path of TimeGenerator (see idfields/_speedups.c)."},
    {Py_tp_new, TimeCore_new},
    {Py_tp_call, TimeCore_call},
    {Py_tp_members, TimeCore_members},
    {Py_tp_getset, TimeCore_getset},
    {Py_tp_traverse, TimeCore_traverse},
    {Py_tp_clear, TimeCore_clear},
    {Py_tp_dealloc, TimeCore_dealloc},
    {0, NULL},
};

static PyType_Spec TimeCore_spec = {
    .name = "idfields._speedups.TimeCore",
    .basicsize = sizeof(TimeCore),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE | Py_TPFLAGS_HAVE_GC,
    .slots = TimeCore_slots,
};

typedef struct {
    PyObject_HEAD
    PyObject *slot;        /* registry._Slot */
    PyObject *values;      /* slot.__dict__: the registry binds (and unbinds) "call" there */
    PyObject *closed;      /* idfields.errors.GeneratorClosed */
    PyObject *call_name;   /* "call" */
    PyObject *after_name;  /* "after_closed" */
    vectorcallfunc vectorcall;
} SlotDefault;

static PyObject *SlotDefault_vectorcall(PyObject *op, PyObject *const *args, size_t nargsf, PyObject *kwnames) {
    SlotDefault *self = (SlotDefault *)op;
    if (PyVectorcall_NARGS(nargsf) > 1 || (kwnames != NULL && PyTuple_GET_SIZE(kwnames) != 0)) {
        PyErr_SetString(PyExc_TypeError, "an ID default takes at most one argument (SQLAlchemy's execution context)");
        return NULL;
    }
    PyObject *result;
    PyObject *source = PyDict_GetItemWithError(self->values, self->call_name);  /* borrowed */
    if (source != NULL) {
        Py_INCREF(source);  /* the call may unbind it */
        result = PyObject_CallNoArgs(source);
        Py_DECREF(source);
    }
    else if (PyErr_Occurred()) {
        return NULL;
    }
    else {
        result = PyObject_CallMethodNoArgs(self->slot, self->call_name);
    }
    if (result == NULL && PyErr_ExceptionMatches(self->closed)) {
        PyErr_Clear();
        result = PyObject_CallMethodNoArgs(self->slot, self->after_name);
    }
    return result;
}

static PyObject *SlotDefault_new(PyTypeObject *type, PyObject *args, PyObject *kwargs) {
    PyObject *slot, *closed;
    static char *names[] = {"slot", "closed", NULL};
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "OO:SlotDefault", names, &slot, &closed)) {
        return NULL;
    }
    if (!PyExceptionClass_Check(closed)) {
        PyErr_Format(PyExc_TypeError, "closed must be an exception class, not %R", closed);
        return NULL;
    }
    PyObject *values = PyObject_GetAttrString(slot, "__dict__");
    if (values == NULL) {
        return NULL;
    }
    if (!PyDict_Check(values)) {
        PyErr_Format(PyExc_TypeError, "the slot's __dict__ is not a dict: %R", values);
        Py_DECREF(values);
        return NULL;
    }
    SlotDefault *self = (SlotDefault *)type->tp_alloc(type, 0);
    if (self == NULL) {
        Py_DECREF(values);
        return NULL;
    }
    self->values = values;
    self->slot = Py_NewRef(slot);
    self->closed = Py_NewRef(closed);
    self->call_name = PyUnicode_InternFromString("call");
    self->after_name = PyUnicode_InternFromString("after_closed");
    self->vectorcall = SlotDefault_vectorcall;
    if (self->call_name == NULL || self->after_name == NULL) {
        Py_DECREF(self);
        return NULL;
    }
    return (PyObject *)self;
}

static PyObject *SlotDefault_repr(SlotDefault *self) {
    return PyUnicode_FromFormat("<idfields ID default of %R>", self->slot);
}

static int SlotDefault_traverse(SlotDefault *self, visitproc visit, void *arg) {
    Py_VISIT(self->slot);
    Py_VISIT(self->values);
    Py_VISIT(self->closed);
    Py_VISIT(Py_TYPE(self));
    return 0;
}

static int SlotDefault_clear(SlotDefault *self) {
    Py_CLEAR(self->slot);
    Py_CLEAR(self->values);
    Py_CLEAR(self->closed);
    Py_CLEAR(self->call_name);
    Py_CLEAR(self->after_name);
    return 0;
}

static void SlotDefault_dealloc(SlotDefault *self) {
    PyTypeObject *type = Py_TYPE(self);
    PyObject_GC_UnTrack(self);
    SlotDefault_clear(self);
    type->tp_free((PyObject *)self);
    Py_DECREF(type);
}

static PyMemberDef SlotDefault_members[] = {
    {"__vectorcalloffset__", T_PYSSIZET, offsetof(SlotDefault, vectorcall), READONLY, NULL},
    {"slot", T_OBJECT, offsetof(SlotDefault, slot), READONLY, "The registry slot whose source it calls."},
    {NULL},
};

static PyType_Slot SlotDefault_slots[] = {
    {Py_tp_doc, "SlotDefault(slot, closed): the compiled per-row ID default (see idfields/_speedups.c)."},
    {Py_tp_new, SlotDefault_new},
    {Py_tp_call, PyVectorcall_Call},
    {Py_tp_repr, SlotDefault_repr},
    {Py_tp_members, SlotDefault_members},
    {Py_tp_traverse, SlotDefault_traverse},
    {Py_tp_clear, SlotDefault_clear},
    {Py_tp_dealloc, SlotDefault_dealloc},
    {0, NULL},
};

static PyType_Spec SlotDefault_spec = {
    .name = "idfields._speedups.SlotDefault",
    .basicsize = sizeof(SlotDefault),
    .flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_HAVE_GC | Py_TPFLAGS_HAVE_VECTORCALL,
    .slots = SlotDefault_slots,
};

/* Holds a buffer of _forking.live: 1, or 0 where the kernel wipes no page on fork (_forking
 * compares pids there, and the generators keep the pure core: no core type is added). */
static int watch_fork_mark(ModuleState *state) {
    PyObject *forking = PyImport_ImportModule("idfields._forking");
    if (forking == NULL) {
        return -1;
    }
    PyObject *live = PyObject_GetAttrString(forking, "live");
    Py_DECREF(forking);
    if (live == NULL) {
        return -1;
    }
    int held = PyObject_CheckBuffer(live);
    if (held && PyObject_GetBuffer(live, &state->live, PyBUF_SIMPLE) < 0) {
        held = -1;
    }
    Py_DECREF(live);
    if (held == 1 && state->live.len != 1) {
        PyBuffer_Release(&state->live);
        PyErr_SetString(PyExc_SystemError, "idfields._forking.live is not a one-byte mark");
        return -1;
    }
    return held;
}

/* CounterCore and TimeCore, which read the fork mark on every call. */
static int add_cores(PyObject *module) {
    PyObject *counter = PyType_FromModuleAndSpec(module, &CounterCore_spec, NULL);
    if (counter == NULL) {
        return -1;
    }
    if (PyModule_AddObjectRef(module, "CounterCore", counter) < 0) {
        Py_DECREF(counter);
        return -1;
    }
    PyObject *timed = PyType_FromModuleAndSpec(module, &TimeCore_spec, counter);
    Py_DECREF(counter);
    if (timed == NULL) {
        return -1;
    }
    int result = PyModule_AddObjectRef(module, "TimeCore", timed);
    Py_DECREF(timed);
    return result;
}

static int speedups_exec(PyObject *module) {
    ModuleState *state = (ModuleState *)PyModule_GetState(module);
    int watching = watch_fork_mark(state);
    if (watching < 0) {
        return -1;
    }
    PyObject *time_module = PyImport_ImportModule("time");
    if (time_module == NULL) {
        return -1;
    }
    state->time_ns = PyObject_GetAttrString(time_module, "time_ns");
    Py_DECREF(time_module);
    if (state->time_ns == NULL) {
        return -1;
    }
    state->slow_name = PyUnicode_InternFromString("_locked_issue");
    if (state->slow_name == NULL) {
        return -1;
    }
    if (watching && add_cores(module) < 0) {
        return -1;
    }
    PyObject *slot_default = PyType_FromModuleAndSpec(module, &SlotDefault_spec, NULL);
    if (slot_default == NULL) {
        return -1;
    }
    int result = PyModule_AddObjectRef(module, "SlotDefault", slot_default);
    Py_DECREF(slot_default);
    return result;
}

static int speedups_traverse(PyObject *module, visitproc visit, void *arg) {
    ModuleState *state = (ModuleState *)PyModule_GetState(module);
    Py_VISIT(state->time_ns);
    Py_VISIT(state->slow_name);
    return 0;
}

static int speedups_clear(PyObject *module) {
    ModuleState *state = (ModuleState *)PyModule_GetState(module);
    Py_CLEAR(state->time_ns);
    Py_CLEAR(state->slow_name);
    return 0;
}

static void speedups_free(void *module) {
    ModuleState *state = (ModuleState *)PyModule_GetState((PyObject *)module);
    speedups_clear((PyObject *)module);
    PyBuffer_Release(&state->live);  /* a no-op when exec failed before holding it */
}

static PyModuleDef_Slot speedups_slots[] = {
    {Py_mod_exec, speedups_exec},
#ifdef Py_mod_gil
    {Py_mod_gil, Py_MOD_GIL_USED},  /* the fast path is atomic only under the GIL */
#endif
    {0, NULL},
};

static struct PyModuleDef speedups_module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "idfields._speedups",
    .m_doc = "The compiled hot paths of idfields' generators and of the SQLAlchemy ID default.",
    .m_size = sizeof(ModuleState),
    .m_slots = speedups_slots,
    .m_traverse = speedups_traverse,
    .m_clear = speedups_clear,
    .m_free = speedups_free,
};

PyMODINIT_FUNC PyInit__speedups(void) {
    return PyModuleDef_Init(&speedups_module);
}
