// Whether the Python interpreter is shutting down: a thread that takes its lock then is ended
// (pthread_exit), which aborts the process when it unwinds through a destructor (a torch
// future's Python callback, a Python hook).
#pragma once

#include <Python.h>

namespace tutti::torch_backend {

inline bool interpreterFinalizing() {
#if PY_VERSION_HEX >= 0x030D0000
  return Py_IsFinalizing() != 0;
#else
  return _Py_IsFinalizing() != 0;
#endif
}

}  // namespace tutti::torch_backend
